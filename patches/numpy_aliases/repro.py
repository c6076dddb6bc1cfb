"""Data and metrics code of the DiT era (the idioms of FID / CLIP-score / bucket-statistics scripts), written for
numpy < 1.24: builtin aliases at module level, numpy 1.x scalar aliases and constants in the computation.

Without zeropatch, on numpy >= 1.24 (np.float) or >= 2.0 (np.float_, np.NaN, np.product):
  AttributeError: module 'numpy' has no attribute 'float'.
With `zeropatch run -- python repro.py` it runs, and each alias is what it was: np.float is the builtin float.
"""

import sys

import numpy as np

FRAME_DTYPE = np.float  # module level, as the scripts have it
LABEL_DTYPE = np.int


def bucket_statistics(num_frames, heights):
    counts = np.zeros(len(num_frames), dtype=LABEL_DTYPE)
    ratios = np.array([h / 240 for h in heights], dtype=FRAME_DTYPE)
    ratios[counts == 0] = np.NaN if len(heights) > 10 else ratios[counts == 0]
    total = np.product(np.array(num_frames, dtype=np.float_)[:3])
    return ratios, total, np.object, np.bool, np.str


def main():
    ratios, total, object_alias, bool_alias, str_alias = bucket_statistics([16, 32, 64, 8], [240, 480, 720, 360])
    if FRAME_DTYPE is not float or LABEL_DTYPE is not int or total != 16 * 32 * 64:
        sys.exit(f"repro: aliases changed meaning: {FRAME_DTYPE}, {LABEL_DTYPE}, {total}")
    if object_alias is not object or str_alias is not str or ratios.dtype != np.float64:
        sys.exit("repro: aliases changed meaning")
    print(f"repro: legacy numpy aliases resolved as before their removal (numpy {np.__version__}, np.bool is {bool_alias})")


if __name__ == "__main__":
    main()
