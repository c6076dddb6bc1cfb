"""The engines patches share, written here, never a library's: attention on torch's SDPA (``attention``) and the
contracts served on it (``xformers_api``: xformers' ``memory_efficient_attention`` and its biases; ``flash_attn_api``:
flash-attn's functions), and the CUDA streams and events of a CPU rehearsal (``cpu_streams``)."""
