"""A stand-in for NVIDIA apex, which cannot be built on a machine without CUDA: only what the tests need.

The t5_apex_norm tests put this folder on PYTHONPATH to simulate a GPU machine with apex installed.
"""
