"""cpu_rehearsal: unmodified GPU training scripts (tests/gpu_scripts, written like the legacy ones) train, save and
resume on two CPU ranks under `zeropatch run --cpu` and nothing else; what the script asks of "the GPU" lands on the
CPU while the libraries are told the truth; the numerics are the script's; it stays off where CUDA is available."""

import json
import re
import sys

import pytest

from conftest import ROOT, assert_ok, clean_environment, distribution_version, requires, run_command, run_python

SCRIPTS = ROOT / "tests" / "gpu_scripts"
REHEARSE = [sys.executable, "-m", "zeropatch", "run", "--cpu", "--"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
REHEARSAL = clean_environment(ZEROPATCH="cpu_rehearsal")


def rehearse(script, output, report, **env):
    return run_command(REHEARSE + TORCHRUN + [str(SCRIPTS / script), str(output)],
                       env=clean_environment(ZEROPATCH_REPORT=report, **env), step=f"{script} rehearsed on 2 ranks")


def mapped(report):
    return json.loads(report.read_text())["reports"]["cpu_rehearsal"]["counts"]


@requires("colossalai", "transformers")
def test_open_sora_style_colossalai_script_trains_saves_and_resumes_on_two_cpu_ranks(tmp_path):
    report = tmp_path / "report.json"
    result = rehearse("train_colossalai.py", tmp_path, report)
    assert_ok(result)
    assert result.stdout.count("resumed, weights") == 2, result.stdout  # both ranks, in step (the script checks)
    counts = mapped(report)
    for what in ("torch.cuda.is_available", "backend 'nccl' -> 'gloo'", "torch.cuda.synchronize", "Tensor.cuda()",
                 "linspace(device=cuda)", "torch.device(cuda)", "torch.load onto the CPU"):
        assert counts.get(what), (what, counts)
    assert "not its speed" in result.stderr, result.stderr[-2000:]  # the report says what a rehearsal proves


@requires("torch")
def test_dit_style_ddp_script_trains_saves_and_resumes_on_two_cpu_ranks(tmp_path):
    report = tmp_path / "report.json"
    result = rehearse("train_ddp.py", tmp_path, report)
    assert_ok(result)
    assert result.stdout.count("resumed, loss") == 2, result.stdout
    counts = mapped(report)
    assert counts["Module.to(cuda)"] and counts["DistributedDataParallel(device_ids=...)"] == 4, counts
    assert counts["autocast(cuda)"] == 6, counts  # 3 steps on each of 2 ranks


@requires("torch")
def test_fsdp1_script_syncs_rank_0s_weights_offloads_and_saves_as_one_process_trains(tmp_path):
    """llama-recipes' FSDP1 set-up (rank 0's weights brought to every rank by sync_module_states, the device given
    as torch.cuda.current_device(), parameters offloaded to the CPU, a full state dict offloaded to rank 0), which
    torch refuses on CPU parameters, trains on two CPU ranks: every rank starts from rank 0's weights, and the saved
    weights equal one process's training on the same batches."""
    report = tmp_path / "report.json"
    result = rehearse("train_fsdp1.py", tmp_path, report)
    assert_ok(result)
    starts = {line.split(" (")[0].split("starts from ")[1]
              for line in result.stdout.splitlines() if "starts from" in line}
    assert len(starts) == 1 and "rank 0's pretrained " + starts.pop() in result.stdout, result.stdout
    assert "equal to one process: True" in result.stdout, result.stdout
    counts = mapped(report)
    for what in ("FSDP1: sync_module_states broadcast over the CPU group (gloo)",
                 "FSDP1: cpu_offload of parameters on the CPU already: left off"):
        assert counts.get(what) == 2, (what, counts)


@requires("accelerate", "deepspeed")
@pytest.mark.parametrize("deepspeed", [True, False], ids=["deepspeed", "ddp"])
def test_accelerate_script_trains_saves_and_resumes_on_two_cpu_ranks(tmp_path, deepspeed):
    report = tmp_path / "report.json"
    launcher = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "2"} if deepspeed else {}
    result = rehearse("train_accelerate.py", tmp_path, report, **launcher)
    assert_ok(result)
    kind = "DEEPSPEED" if deepspeed else "MULTI_CPU"
    assert f"resumed on 2 ranks (DistributedType.{kind})" in result.stdout, result.stdout  # gather saw 2 ranks
    counts = mapped(report)
    assert counts["Tensor.pin_memory()"] and counts["Tensor.cuda()"], counts


FSDP1_PLUGINS = '''
import os, sys
from accelerate.utils import FullyShardedDataParallelPlugin as Plugin
for given, variables in [({"sync_module_states": True}, {}), ({"cpu_ram_efficient_loading": True}, {}),
                         ({"cpu_ram_efficient_loading": True, "sync_module_states": False}, {}),
                         ({}, {"FSDP_SYNC_MODULE_STATES": "true", "FSDP_CPU_RAM_EFFICIENT_LOADING": "true"})]:
    for name in ("FSDP_SYNC_MODULE_STATES", "FSDP_CPU_RAM_EFFICIENT_LOADING"):
        os.environ.pop(name, None)
    os.environ.update(variables)
    plugin = Plugin(**given)
    told = os.environ.get("FSDP_CPU_RAM_EFFICIENT_LOADING", "").lower()
    print("plugin", plugin.sync_module_states, plugin.cpu_ram_efficient_loading, told in ("true", "1"),
          plugin.param_init_fn.__name__, flush=True)
'''


@requires("accelerate")
def test_fsdp1_plugins_that_sync_module_states_materialise_meta_parameters_on_the_cpu():
    """accelerate's FSDP1 plugin with sync_module_states given, or turned on by cpu_ram_efficient_loading (given or
    from the launcher's variables), looks for a GPU to materialise meta parameters on; rehearsed, it takes the CPU,
    and keeps both settings and what it tells transformers (FSDP_CPU_RAM_EFFICIENT_LOADING) as on a GPU."""
    plain = run_python(FSDP1_PLUGINS, env=clean_environment())
    assert plain.returncode != 0 and re.search(  # (accelerate's words for it changed between releases)
        r"There are currently no available devices found|`sync_module_states=True` is not supported on cpu",
        plain.stderr), plain.stderr
    rehearsed = run_command(REHEARSE + [sys.executable, "-c", FSDP1_PLUGINS], env=clean_environment())
    assert_ok(rehearsed)
    lines = [line for line in rehearsed.stdout.splitlines() if line.startswith("plugin ")]
    efficient = "True" if distribution_version("accelerate") >= (1, 12) else "False"  # 1.12 passes one given on
    assert lines == ["plugin True False False _materialised_on_the_cpu",
                     f"plugin True True {efficient} _materialised_on_the_cpu",
                     f"plugin True True {efficient} _materialised_on_the_cpu",
                     "plugin True True True _materialised_on_the_cpu"], rehearsed.stdout


ZERO3 = {"bf16": {"enabled": "auto"}, "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
         "gradient_accumulation_steps": "auto",  # the shape of LLaVA-1.5's scripts/zero3.json
         "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True,
                               "stage3_gather_16bit_weights_on_model_save": True}}


FSDP_OPTIONS = ["--fsdp", "full_shard auto_wrap", "--fsdp_transformer_layer_cls_to_wrap", "LlamaDecoderLayer"]
FSDP1_UNDER, FSDP2_UNDER = "FullyShardedDataParallel, parameters Parameter", "FSDP2, parameters DTensor"
TRAINER_LAUNCHES = {  # the HF Trainer's sharded launches -> (options, what each rank trains under on transformers 5, 4)
    "deepspeed-zero3": (lambda folder: ["--deepspeed", str(folder / "zero3.json")],
                        ("DeepSpeedEngine, ZeRO stage 3",) * 2),
    "fsdp": (lambda folder: FSDP_OPTIONS, (FSDP2_UNDER, FSDP1_UNDER)),  # transformers 5 made --fsdp mean FSDP2
    "fsdp1": (lambda folder: ["--fsdp", "full_shard offload auto_wrap", *FSDP_OPTIONS[2:], "--fsdp_config",
                              '{"version": 1}'], (FSDP1_UNDER, None)),  # offload: the parameters stay on the CPU
}


@pytest.mark.release_sweep  # two launches of two ranks each, 30-40 s a case: run by the deepspeed stack's sweep
@requires("transformers", "deepspeed", "safetensors")
@pytest.mark.parametrize("launch", list(TRAINER_LAUNCHES))
def test_the_trainers_sharded_launches_train_save_and_resume_on_two_cpu_ranks(tmp_path, launch):
    """LLaVA-1.5's launch, `torchrun train.py --deepspeed zero3.json --bf16 True --tf32 True`, and stanford_alpaca's /
    FastChat's, `--fsdp "full_shard auto_wrap" --fsdp_transformer_layer_cls_to_wrap LlamaDecoderLayer`, on a float16
    checkpoint. Rehearsed on two CPU ranks, both ranks train sharded — under one ZeRO-3 engine with the model built
    partitioned (DeepSpeed's zero.Init), or under FSDP over gloo (accelerate alone would wrap the model in DDP on
    the CPU): FSDP2 for transformers 5's --fsdp, FSDP1 for 4's and for fsdp_config version 1, whose default
    sync_module_states torch takes on GPUs only — with float32 master weights, save the gathered weights (every
    tensor moved), and a second launch resumes from the checkpoint. zero.Init's save-and-restore of every module
    class's __init__ leaves the patches on them applied. The release sweep runs it (the deepspeed stack: each
    DeepSpeed / accelerate / transformers triple, transformers 4.51.3 and 5.23.0), not the test sessions."""
    import torch
    from safetensors.torch import load_file

    options, (under_5, under_4) = TRAINER_LAUNCHES[launch]
    trained_under = under_5 if distribution_version("transformers") >= (5,) else under_4
    if trained_under is None:
        pytest.skip("transformers 4 has no fsdp_config version: its --fsdp launch is FSDP1 (the fsdp case)")
    made = run_python(f"""
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                             num_attention_heads=2, num_key_value_heads=2)
        LlamaForCausalLM(config).half().save_pretrained({str(tmp_path / "model")!r})
    """, env=clean_environment(ZEROPATCH="0"))
    assert_ok(made)
    (tmp_path / "zero3.json").write_text(json.dumps(ZERO3))
    output, report = tmp_path / "output", tmp_path / "report.json"
    command = REHEARSE + TORCHRUN + [str(SCRIPTS / "train_hf_trainer.py"),
                                     "--model_name_or_path", str(tmp_path / "model"),
                                     "--output_dir", str(output), *options(tmp_path),
                                     "--bf16", "True", "--tf32", "True", "--per_device_train_batch_size", "2",
                                     "--learning_rate", "0.01", "--save_strategy", "steps", "--save_steps", "2",
                                     "--report_to", "none"]
    trained = run_command(command + ["--max_steps", "2"], env=clean_environment(ZEROPATCH_REPORT=str(report)),
                          step=f"the Trainer's {launch} launch rehearsed on 2 ranks")
    assert_ok(trained)
    for rank in (0, 1):
        line = f"rank {rank} of 2: {trained_under}, resumed False, step 2, master weights ['torch.float32']"
        assert line in trained.stdout, trained.stdout
    reported = json.loads(report.read_text())
    states = reported["patches"]["hf_post_init"]["states"]
    assert "skipped" not in states, states  # applied on both ranks' model classes (not needed on transformers 4)
    before, after = load_file(tmp_path / "model" / "model.safetensors"), load_file(output / "model.safetensors")
    assert before.keys() == after.keys()
    assert [name for name in before if torch.equal(before[name].float(), after[name].float())] == [], "untrained"
    if launch != "deepspeed-zero3":
        counts = reported["reports"]["cpu_rehearsal"]["counts"]
        version = 2 if trained_under == FSDP2_UNDER else 1
        assert counts[f"accelerate: FSDP{version} over the CPU ranks (gloo), as the launch asked"] == 2, counts
        if version == 1:  # the HF Trainer's FSDP1 default, broadcast over gloo where torch takes GPU parameters only
            assert counts["FSDP1: sync_module_states broadcast over the CPU group (gloo)"] == 2, counts
        if launch == "fsdp1":
            assert counts["FSDP1: cpu_offload of parameters on the CPU already: left off"] == 2, counts
    resumed = run_command(command + ["--max_steps", "3"], env=clean_environment(), step=f"the {launch} launch resumed")
    assert_ok(resumed)
    assert resumed.stdout.count(f"{trained_under}, resumed True, step 3") == 2, resumed.stdout


@requires("accelerate")
def test_without_the_rehearsal_accelerate_sees_one_rank_each_and_the_script_stops(tmp_path):
    """The control: the same launch without --cpu stops at the GPU assertion, and accelerate without a GPU gives
    each of two launched ranks a world of one (the rehearsal gives them one of two)."""
    plain = run_command([sys.executable, "-m", "zeropatch", "run", "--"] + TORCHRUN +
                        [str(SCRIPTS / "train_accelerate.py"), str(tmp_path)], env=clean_environment())
    assert plain.returncode != 0 and "Training currently requires at least one GPU" in plain.stderr, plain.stderr[-2000:]
    probe = tmp_path / "processes.py"
    # one write per rank (lines do not interleave), then a barrier: a rank that exits while the other still connects
    # its gloo mesh fails that one ("Connection closed by peer")
    probe.write_text("import os\nfrom accelerate import PartialState\nstate = PartialState()\n"
                     "os.write(1, f'processes {state.num_processes}\\n'.encode())\nstate.wait_for_everyone()\n")
    for launch, processes in ((TORCHRUN, 1), (REHEARSE + TORCHRUN, 2)):
        result = run_command(launch + [str(probe)], env=clean_environment())
        assert_ok(result)
        assert result.stdout.count(f"processes {processes}") == 2, result.stdout


@requires("torch")
def test_the_script_is_told_of_a_gpu_the_libraries_of_the_cpu():
    assert_ok(run_python('''
        import torch, torch.utils.data
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1 and torch.cuda.current_device() == 0
        library = {"__name__": "accelerate.utils.imports"}  # code of a library, which sets itself up from the machine
        exec("answer = torch.cuda.is_available()", dict(library, torch=torch), scope := {})
        assert scope["answer"] is False, scope
        # every CUDA device the script names is the CPU
        assert torch.device("cuda:1") == torch.device("cpu") and torch.device(0) == torch.device("cpu")
        x = torch.arange(4.0)
        for moved in (x.cuda(), x.to("cuda"), x.to(0), x.to(device="cuda:0"), x.to(torch.device("cuda"), torch.float64),
                      torch.zeros(2, device="cuda"), x.new_ones(2, device=0), x.pin_memory()):
            assert moved.device.type == "cpu", moved
        assert x.to(torch.float64).dtype == torch.float64  # dtypes and CPU moves are untouched
        from concurrent.futures import ThreadPoolExecutor  # a collate pool pins in its own threads (SimpleTuner)
        with ThreadPoolExecutor(2) as pool:
            assert all(pinned is x for pinned in pool.map(lambda _: x.pin_memory(), range(4)))
        model = torch.nn.Linear(2, 2)
        weight = model.weight
        assert model.to(0) is model and model.cuda() is model and model.weight is weight
        with torch.autocast("cuda"):  # CUDA autocast's default dtype, on the CPU
            assert model(torch.ones(1, 2)).dtype == torch.float16
        scaler = torch.amp.GradScaler("cuda")
        assert scaler.is_enabled()  # the scaler runs (on the CPU) instead of disabling itself
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); torch.cuda.synchronize(); end.record()
        assert start.elapsed_time(end) >= 0
        state = torch.cuda.get_rng_state()
        first = torch.rand(2, device="cuda")
        torch.cuda.set_rng_state(state)
        assert torch.equal(torch.rand(2, device="cuda"), first)  # the script's CUDA generator is the CPU's
        torch.cuda.set_device(1)
        assert torch.cuda.current_device() == 1
        print("ok")
    ''', env=REHEARSAL))


@requires("torch")
def test_load_puts_gpu_locations_on_the_cpu(tmp_path):
    """A checkpoint whose storages say cuda:0 (written on a GPU machine; here the location tag is written by hand,
    the one thing a CPU machine cannot produce) loads onto the CPU, with or without a map_location."""
    assert_ok(run_python(f'''
        import torch, torch.serialization as s
        path = {str(tmp_path / "gpu.pt")!r}
        original = s.location_tag
        s.location_tag = lambda storage: "cuda:0"
        torch.save({{"w": torch.arange(3.0)}}, path)
        s.location_tag = original
        try:
            torch.load(path)
            raise SystemExit("loaded a cuda:0 storage without the rehearsal")
        except RuntimeError as error:
            assert "CUDA" in str(error), error
        import zeropatch
        zeropatch.install("cpu_rehearsal")
        for location in (None, "cuda", "cuda:1", 0, {{"cuda:0": "cuda:1"}}, torch.device("cuda")):
            loaded = torch.load(path, map_location=location) if location is not None else torch.load(path)
            assert torch.equal(loaded["w"], torch.arange(3.0)) and loaded["w"].device.type == "cpu"
        print("ok")
    ''', env=clean_environment()))


@requires("transformers")
def test_t5_norm_stands_in_for_apex_with_the_same_numerics_and_keys():
    code = '''
        import torch
        from transformers import T5Config, T5EncoderModel
        torch.manual_seed(0)
        model = T5EncoderModel(T5Config(vocab_size=32, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_heads=4)).eval()
        norm = model.encoder.final_layer_norm
        out = model(torch.arange(6).reshape(1, 6)).last_hidden_state
        print(type(norm).__name__, ",".join(sorted(model.state_dict())), out.sum().item())
        if type(norm).__name__ == "FusedRMSNorm":
            assert norm.normalized_shape == (16,) and norm.eps == norm.variance_epsilon
    '''
    plain = run_python(code, env=clean_environment(ZEROPATCH="0"))
    rehearsed = run_python(code, env=REHEARSAL)
    assert_ok(plain)
    assert_ok(rehearsed)
    plain, rehearsed = (result.stdout.splitlines()[-1].split() for result in (plain, rehearsed))  # past library logs
    assert plain[0] == "T5LayerNorm" and rehearsed[0] == "FusedRMSNorm", rehearsed
    assert plain[1:] == rehearsed[1:]  # same keys, same output, bit for bit


@requires("torch", "accelerate", "transformers")
def test_the_trainers_bf16_and_tf32_options_run_on_the_cpu(tmp_path):
    """A GPU job's `--bf16 True --tf32 True` (stanford_alpaca's, FastChat's launch): TrainingArguments refuses them on
    a CPU (bf16 since transformers 5); rehearsed, training runs its layers in bfloat16 with float32 master weights,
    and torch's global float32 matmul precision is left as it was (transformers 5 would set it to TF32)."""
    refused = run_python(f"""
        from transformers import TrainingArguments
        for option in ("bf16", "tf32"):
            try:
                TrainingArguments(output_dir={str(tmp_path)!r}, report_to=[], **{{option: True}})
            except ValueError as error:
                print(option, "refused:", error)
    """, env=clean_environment(ZEROPATCH="0"))
    assert_ok(refused)
    assert "--tf32 requires Ampere or a newer GPU arch" in refused.stdout, refused.stdout
    bf16_refused = distribution_version("transformers") >= (5,)  # 4.x trains bf16 on a CPU as it is
    assert ("bf16 refused: Your setup doesn't support bf16/gpu" in refused.stdout) == bf16_refused, refused.stdout
    rehearsed = run_python(f"""
        import torch, zeropatch
        from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
        precision = getattr(torch.backends, "fp32_precision", None)
        args = TrainingArguments(output_dir={str(tmp_path)!r}, bf16=True, tf32=True, per_device_train_batch_size=2,
                                 max_steps=2, report_to=[], save_strategy="no")
        model = LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, num_key_value_heads=2))
        seen = []
        model.model.layers[0].mlp.down_proj.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
        before = model.lm_head.weight.detach().clone()
        data = [{{"input_ids": torch.arange(8), "labels": torch.arange(8)}}] * 4
        Trainer(model=model, args=args, train_dataset=data).train()
        assert set(seen) == {{torch.bfloat16}} and model.lm_head.weight.dtype == torch.float32, (seen, model.dtype)
        assert not torch.equal(before, model.lm_head.weight)
        assert getattr(torch.backends, "fp32_precision", None) == precision
        from zeropatch.patches.torch import _rehearsal_record
        print(sorted(what for what in _rehearsal_record._mapped if what.startswith("transformers")))
    """, env=REHEARSAL)
    assert_ok(rehearsed)
    assert ("--bf16 on the CPU" in rehearsed.stdout) == bf16_refused and "TF32 setting" in rehearsed.stdout, rehearsed.stdout


@requires("torch", "transformers", "safetensors")
def test_a_device_map_naming_a_gpu_loads_on_the_cpu(tmp_path):
    """`from_pretrained(path, device_map={"": local_rank})` (the DDP launches of alpaca-lora's and FastChat's QLoRA
    paths, `"cuda:0"`): transformers moves the loaded weights in worker threads, out of the device mode's reach, and
    fails on a CPU machine; rehearsed (installed into the same process), the same loads give the saved weights on the
    CPU."""
    loaded = run_python(f"""
        import torch, zeropatch
        from transformers import LlamaConfig, LlamaForCausalLM
        folder = {str(tmp_path)!r}
        LlamaForCausalLM(LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=2)).save_pretrained(folder)
        saved = LlamaForCausalLM.from_pretrained(folder).state_dict()
        try:
            LlamaForCausalLM.from_pretrained(folder, device_map={{"": 0}})
            print("plain: loaded")
        except (RuntimeError, AssertionError) as error:
            print("plain:", type(error).__name__)
        zeropatch.install("cpu_rehearsal")
        for device_map in ({{"": 0}}, "cuda:0", {{"": torch.device("cuda", 1)}}):
            model = LlamaForCausalLM.from_pretrained(folder, device_map=device_map)
            assert all(torch.equal(tensor, saved[name]) for name, tensor in model.state_dict().items())
            print(device_map, "->", sorted({{str(tensor.device) for tensor in model.state_dict().values()}}))
    """, env=clean_environment())  # the default patches, then the rehearsal
    assert_ok(loaded)
    lines = loaded.stdout.strip().splitlines()
    assert lines[-4] in ("plain: RuntimeError", "plain: AssertionError"), loaded.stdout  # no NVIDIA driver / CUDA
    assert [line.split(" -> ")[1] for line in lines[-3:]] == ["['cpu']"] * 3, loaded.stdout


@requires("torch", "accelerate", "transformers")
@pytest.mark.parametrize("build", ["cuda", "rocm"])
def test_no_part_starts_where_a_gpu_is_unless_asked(build):
    """A machine with a GPU is simulated (this one has none): a CUDA build, or a ROCm one (``torch.version.hip``, no
    ``torch.version.cuda``), whose device count answers 1. Each part of the rehearsal is checked: torch's (the script
    sees the truth), accelerate's state, T5's norm, the Trainer's launch options, FSDP1 and from_pretrained's
    device_map (untouched)."""
    code = f'''
        import torch
        if {build!r} == "rocm":
            torch.version.cuda, torch.version.hip = None, "6.4.0"
        else:
            torch.version.cuda = torch.version.cuda or "12.8"
        torch.cuda.device_count = lambda: 1
        import zeropatch
        zeropatch.install("cpu_rehearsal")
        import accelerate.state
        from transformers import training_args
        from transformers.models.t5 import modeling_t5
        from torch.distributed.fsdp import fully_sharded_data_parallel as fsdp1
        from transformers import modeling_utils
        from zeropatch.patches.torch._rehearsal_devices import device_map_on_cpu
        wrappers = lambda f: [f._self_wrapper] + wrappers(f.__wrapped__) if hasattr(f, "_self_wrapper") else []
        record = zeropatch.status("cpu_rehearsal")[0]
        parts = {{
            "torch": torch.cuda.is_available(),
            "accelerate": hasattr(accelerate.state.PartialState._prepare_backend, "__wrapped__"),
            "t5": modeling_t5.T5LayerNorm.__name__ == "FusedRMSNorm",
            "training_args": hasattr(training_args.is_torch_tf32_available, "_self_wrapper"),
            "fsdp1": hasattr(fsdp1.FullyShardedDataParallel.__init__, "_self_wrapper"),
            "modeling_utils": device_map_on_cpu in wrappers(vars(modeling_utils.PreTrainedModel)["from_pretrained"]),
        }}
        print(record.state, "|", record.reason)
        print(sorted(part for part, rehearsed in parts.items() if rehearsed))
    '''
    kept_off = run_python(code, env=clean_environment())
    assert_ok(kept_off)
    state, rehearsed = kept_off.stdout.strip().splitlines()[-2:]
    assert state.startswith("not-needed |") and state.count("CUDA is available here") == 6, state
    assert rehearsed == "[]", rehearsed
    if build == "rocm":
        return  # asked for anyway, the rehearsal starts the same for either build (checked once, on CUDA's)
    asked = run_python(code, env=clean_environment(ZEROPATCH_REHEARSAL_ON_GPU="1"))
    assert_ok(asked)
    state, rehearsed = asked.stdout.strip().splitlines()[-2:]
    assert state.startswith("applied"), state
    assert rehearsed == "['accelerate', 'fsdp1', 'modeling_utils', 't5', 'torch', 'training_args']", rehearsed


@requires("torch")
def test_it_is_opt_in_and_run_cpu_adds_it_with_colossalai_cpu():
    assert_ok(run_python('''
        import zeropatch
        states = {record.name: record.state for record in zeropatch.status()}
        assert states["cpu_rehearsal"] == "disabled" and states["colossalai_cpu"] == "disabled", states
        import torch
        assert not torch.cuda.is_available()
        zeropatch.install("cpu_rehearsal")
        states = {record.name: record.state for record in zeropatch.status()}
        assert states["colossalai_cpu"] != "disabled", states  # brought by the rehearsal
        print("ok")
    ''', env=clean_environment(ZEROPATCH="1")))
    result = run_command(REHEARSE + [sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                         env=clean_environment(ZEROPATCH="pg_deepcopy"))
    assert_ok(result)
    assert "applied: cpu_rehearsal (in 1), pg_deepcopy (in 1)" in result.stderr, result.stderr  # added to ZEROPATCH
    assert "torch.cuda.is_available x1 (first at <string>:1)" in result.stderr, result.stderr


def test_explain_names_the_rehearsal_for_a_gpu_only_script():
    result = run_command([sys.executable, "-m", "zeropatch", "explain",
                          "AssertionError: Training currently requires at least one GPU."], env=clean_environment())
    assert_ok(result)
    assert result.stdout.startswith("cpu_rehearsal:") and "zeropatch run --cpu --" in result.stdout, result.stdout


FABRIC_SCRIPT = '''
import sys, torch
from lightning_fabric import Fabric
fabric = Fabric(accelerator="cuda", devices=int(sys.argv[1]), strategy="ddp" if sys.argv[1] == "2" else "auto")
fabric.launch()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = fabric.setup(model, optimizer)
for step in range(2):
    loss = model(torch.ones(2, 4, device=fabric.device)).pow(2).mean()
    fabric.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
fabric.save(sys.argv[2], {"model": model, "optimizer": optimizer, "step": 2})
state = {"model": model, "optimizer": optimizer, "step": 0}
fabric.load(sys.argv[2], state)
print(f"rank {fabric.global_rank} of {fabric.world_size} on {fabric.device.type}: resumed at step {state['step']}")
'''


@requires("lightning_fabric")
@pytest.mark.parametrize("devices", [1, 2])
def test_a_fabric_asked_for_cuda_trains_saves_and_resumes_on_cpu_processes(tmp_path, devices):
    """lightning's Fabric(accelerator="cuda", devices=N), as 2023 launchers built it: without the rehearsal Lightning
    refuses the machine; with it, N CPU processes (Fabric's own launcher starts the others, which `zeropatch run`
    patches too) train two steps, save and resume."""
    script = tmp_path / "fabric_train.py"
    script.write_text(FABRIC_SCRIPT)
    arguments = [str(script), str(devices), str(tmp_path / "checkpoint.ckpt")]
    if devices == 1:
        plain = run_command([sys.executable, *arguments], env=clean_environment())
        assert plain.returncode != 0 and "CUDAAccelerator" in plain.stderr and "not available" in plain.stderr, \
            plain.stderr[-2000:]
    report = tmp_path / "report.json"
    result = run_command(REHEARSE + [sys.executable, *arguments], env=clean_environment(ZEROPATCH_REPORT=report),
                         step=f"a Fabric of {devices} rehearsed")
    assert_ok(result)
    for rank in range(devices):
        assert f"rank {rank} of {devices} on cpu: resumed at step 2" in result.stdout, result.stdout
    assert any("lightning_fabric: accelerator='cuda'" in what for what in mapped(report)), mapped(report)


@requires("deepspeed")
def test_deepspeed_fp16_script_trains_saves_and_resumes_on_two_cpu_ranks(tmp_path):
    """A 2023 DeepSpeed fp16 ZeRO-2 script: its config's fractional min_loss_scale is refused by today's validation
    (ds_config_keys keeps it, the loss scaler's floor), and DeepSpeed's CPU accelerator refuses fp16 where the CPU has
    no native half arithmetic (the rehearsal admits it: torch's half kernels); it trains, saves and resumes."""
    without = rehearse("train_deepspeed_fp16.py", tmp_path / "without", tmp_path / "without.json",
                       ZEROPATCH_DISABLE="ds_config_keys")
    assert without.returncode != 0 and "got a number with a fractional part" in without.stderr, without.stderr[-3000:]
    asked = "from deepspeed.accelerator import get_accelerator; print('fp16', bool(get_accelerator().is_fp16_supported()))"
    native = run_python(asked, env=clean_environment(ZEROPATCH="0"))
    assert_ok(native)
    report = tmp_path / "report.json"
    result = rehearse("train_deepspeed_fp16.py", tmp_path / "rehearsed", report)
    assert_ok(result)
    assert "resumed fp16 ZeRO-2 on 2 ranks" in result.stdout and "floor 1e-10" in result.stdout, result.stdout
    counts = mapped(report)
    admitted = [what for what in counts if what.startswith("deepspeed: fp16 on the CPU")]
    assert bool(admitted) == ("fp16 False" in native.stdout), (native.stdout, counts)  # where the CPU lacks it
    assert counts["torch.cuda.set_device"] == 2 and counts["Tensor.cuda()"], counts
