"""The one rule for ``use_auth_token``, which transformers 5 and huggingface_hub 1.0 removed in favour of ``token``;
``transformers_use_auth_token`` and ``hf_hub_legacy`` both apply it.

``use_auth_token=None`` is dropped; any other value becomes ``token`` (one log line); given with a different
non-None ``token``, the call is refused with transformers 4.x's message rather than one credential silently
chosen over the other (hub 0.2x let ``token`` win; transformers 4.x refused even equal values, which change nothing).
"""

from zeropatch._core import inform_once

BOTH_GIVEN = "`token` and `use_auth_token` are both specified. Please set only the argument `token`."


def token_for_use_auth_token(keywords, patch, call):
    """``keywords`` with ``use_auth_token`` turned into ``token``: a new dict (the caller's is left alone), or
    ``keywords`` itself when it has no ``use_auth_token``. ``patch`` and ``call`` name the log line's source."""
    if "use_auth_token" not in keywords:
        return keywords
    keywords = dict(keywords)
    use_auth_token = keywords.pop("use_auth_token")
    if use_auth_token is None:
        return keywords
    token = keywords.get("token")
    if token is not None and token != use_auth_token:
        raise ValueError(BOTH_GIVEN)
    keywords["token"] = use_auth_token
    inform_once(f"{patch}: {call}(use_auth_token=...) -> token=..., as before its removal")
    return keywords
