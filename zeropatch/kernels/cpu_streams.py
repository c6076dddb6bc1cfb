"""Accelerator streams and events on the CPU, where work is ordered and done when a call returns: what
``colossalai_cpu`` gives ColossalAI's CPU accelerator and ``cpu_rehearsal`` gives a script's ``torch.cuda``."""

import time


class CpuEvent:
    """An accelerator event on the CPU (``torch.cuda.Event``'s interface): recording takes the time."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.recorded_at = None

    def record(self, stream=None):
        self.recorded_at = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end_event):
        return (end_event.recorded_at - self.recorded_at) * 1000.0


class CpuStream:
    """An accelerator stream on the CPU (``torch.cuda.Stream``'s interface), where every operation is already
    ordered."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device = device

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or CpuEvent()
        event.record()
        return event

    def synchronize(self):
        pass

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
