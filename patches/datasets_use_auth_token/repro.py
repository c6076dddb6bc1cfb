"""transformers' run_glue.py of 2021-2023 (and run_clm.py, run_summarization.py, the fine-tuners written from them)
loads its CSV / JSON files with the hub token keyword of its time, None unless --use_auth_token is given.

Without zeropatch, on datasets >= 3.0:
  TypeError: CsvConfig.__init__() got an unexpected keyword argument 'use_auth_token'
With `zeropatch run -- python repro.py` it runs: use_auth_token means token again (None: no token, as before).
"""

import os
import sys
import tempfile


def main():
    with tempfile.TemporaryDirectory(prefix="repro-glue-") as folder:
        os.environ.update(HF_HOME=os.path.join(folder, "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
        from datasets import load_dataset

        data_files = {}
        for split, rows in (("train", 4), ("validation", 2)):
            data_files[split] = os.path.join(folder, f"{split}.csv")
            with open(data_files[split], "w") as file:
                file.write("sentence1,label\n" + "".join(f"sentence {row},{row % 2}\n" for row in range(rows)))
        use_auth_token = False  # model_args.use_auth_token, run_glue.py's default
        raw_datasets = load_dataset("csv", data_files=data_files, cache_dir=os.path.join(folder, "cache"),
                                    use_auth_token=True if use_auth_token else None)
        sizes = {split: raw_datasets[split].num_rows for split in data_files}
        second = raw_datasets["train"][1]
        if sizes != {"train": 4, "validation": 2} or second != {"sentence1": "sentence 1", "label": 1}:
            sys.exit(f"repro: the CSV files read as {raw_datasets}")
        print(f"repro: run_glue's load_dataset call read {sizes['train']} train and {sizes['validation']} "
              "validation rows")


if __name__ == "__main__":
    main()
