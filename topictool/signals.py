"""SIGTERM and SIGINT during long work (training, cooc): a flag read between steps, so a
cluster's preemption or Ctrl-C ends in a saved state and exit 0, never a half-written file."""

import signal
import threading


class StopFlag:
    """Context manager: while active, SIGTERM/SIGINT set ``self.signal`` instead of killing
    the process (only in the main thread, where Python delivers signals)."""

    def __init__(self):
        self.signal = None
        self._old = {}

    def __call__(self, signum, frame):
        self.signal = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = {s: signal.signal(s, self) for s in (signal.SIGTERM, signal.SIGINT)}
        return self

    def __exit__(self, *exc):
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old = {}
