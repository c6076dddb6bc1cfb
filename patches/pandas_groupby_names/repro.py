"""Open-Sora 1.1+'s bucket building (opensora/datasets/sampler.py): pandarallel's parallel_apply over the dataset
table, and over its groups.

Without zeropatch, on pandas >= 3.1 (pandarallel 1.6.5, the newest):
  ImportError: cannot import name 'ExpandingGroupby' from 'pandas.core.window.expanding'
With `zeropatch run -- python repro.py` pandarallel imports, and parallel_apply gives what apply gives.
"""

import sys

import pandas as pd
from pandarallel import pandarallel


def bucket_id(row):
    return int(row["num_frames"] // 16) * 10 + int(row["height"] // 240)


def main():
    pandarallel.initialize(nb_workers=2, progress_bar=False, verbose=0)
    table = pd.DataFrame({"num_frames": [16, 32, 51, 64, 102, 8] * 4, "height": [240, 480, 720, 360, 240, 480] * 4,
                          "fps": [24, 30, 24, 25, 30, 24] * 4})
    rows = table.parallel_apply(bucket_id, axis=1)
    groups = table.groupby("fps").parallel_apply(lambda group: group["num_frames"].sum())
    if not rows.equals(table.apply(bucket_id, axis=1)) or not groups.equals(table.groupby("fps").apply(
            lambda group: group["num_frames"].sum())):
        sys.exit("repro: parallel_apply differs from apply")
    print(f"repro: pandarallel's parallel_apply equals apply on a DataFrame and a DataFrameGroupBy (pandas {pd.__version__})")


if __name__ == "__main__":
    main()
