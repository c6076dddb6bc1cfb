"""mmcv_yapf: mmcv 1.x's config dump works on today's yapf: ``FormatCode(..., verify=True)`` is accepted again.

Breaks: yapf 0.40.2 removed ``FormatCode``'s ``verify`` keyword. mmcv 1.x (PixArt-alpha pins 1.7.0) formats every
config it dumps or prints with ``FormatCode(text, style_config=..., verify=True)``, so ``Config.dump`` and
``Config.pretty_text`` (the config dump every PixArt-alpha run starts with) die: "TypeError: FormatCode() got an
unexpected keyword argument 'verify'".

Changes: ``yapf.yapflib.yapf_api.FormatCode`` takes ``verify`` again, with its old meaning: with ``verify=True`` the
reformatted code is compiled, and a syntax error in it is raised (0.40.1 checked the same); with ``verify=False`` it
formats as today. Where ``FormatCode`` still has ``verify`` (<= 0.40.1) nothing changes.
"""

from zeropatch._core import NotNeeded, Patch, Skip


def _format_code(wrapped, instance, args, kwargs):
    verify = kwargs.pop("verify", False)
    result = wrapped(*args, **kwargs)
    if verify:
        source = wrapped(*args, **dict(kwargs, print_diff=False))[0] if kwargs.get("print_diff") else result[0]
        compile(source, kwargs.get("filename", "<unknown>"), "exec")  # 0.40.1's verify: the output must compile
    return result


def apply(patcher, yapf_api):
    import inspect

    format_code = getattr(yapf_api, "FormatCode", None)
    if format_code is None:
        raise Skip("yapf.yapflib.yapf_api has no FormatCode")
    if "verify" in inspect.signature(format_code).parameters:
        raise NotNeeded("FormatCode still takes verify (yapf <= 0.40.1)")
    patcher.wrap(yapf_api, "FormatCode", _format_code)
    return "FormatCode(..., verify=...) accepted, with its 0.40.1 meaning"


PATCH = Patch(
    "mmcv_yapf",
    since="0.3.0",
    summary="yapf's FormatCode accepts verify= again (removed in 0.40.2): mmcv 1.x's Config.dump / pretty_text work",
    package="yapf",
    affected="0.40.2-0.43.0",
    targets=("yapf.yapflib.yapf_api",),
    apply=apply,
    errors=(r"FormatCode\(\) got an unexpected keyword argument 'verify'",),
    looks_for=("call mmcv.Config.dump", "call mmcv.Config.fromfile"),
)
