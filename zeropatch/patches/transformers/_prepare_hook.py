"""For one ``generate`` call, a model instance's ``prepare_inputs_for_generation`` seen through a wrapper: generate
looks the hook up on the instance, so the wrapper is set there for the call and taken away after it. Wrappers of
several patches stack (each wraps what the instance answers now) and come off in reverse."""

HOOK = "prepare_inputs_for_generation"


def generate_with_the_hook_wrapped(model, wrap, generate, args, kwargs):
    """``generate(*args, **kwargs)`` while ``model.prepare_inputs_for_generation`` is ``wrap(what it was)``."""
    state = vars(model)
    had, previous = HOOK in state, state.get(HOOK)
    state[HOOK] = wrap(getattr(model, HOOK))
    try:
        return generate(*args, **kwargs)
    finally:
        if had:
            state[HOOK] = previous
        else:
            state.pop(HOOK, None)
