"""For one ``generate`` call, a model instance's ``prepare_inputs_for_generation`` (or ``forward``) seen through a
wrapper: generate looks them up on the instance, so the wrapper is set there for the call and taken away after it.
Wrappers of several patches stack (each wraps what the instance answers now) and come off in reverse."""

HOOK = "prepare_inputs_for_generation"


def generate_with_wrapped(model, wrappers, generate, args, kwargs):
    """``generate(*args, **kwargs)`` while each ``model.<name>`` is ``wrap(what it was)`` (``wrappers``: name ->
    wrap)."""
    state = vars(model)
    before = {name: (name in state, state.get(name)) for name in wrappers}
    for name, wrap in wrappers.items():
        state[name] = wrap(getattr(model, name))
    try:
        return generate(*args, **kwargs)
    finally:
        for name, (had, previous) in before.items():
            if had:
                state[name] = previous
            else:
                state.pop(name, None)
