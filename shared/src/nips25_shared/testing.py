"""Test helpers for the nips25 packages: run a script under ``accelerate launch`` with CPU processes.

Imported only by tests (``from nips25_shared.testing import run_accelerate``); nothing at the top level of
``nips25_shared`` depends on it, and it imports neither torch nor accelerate itself.

Why the environment variable: on a machine without a GPU, ``accelerate launch --cpu --num_processes 2`` starts
*one* process (the CPU multi-process path goes through mpirun), and ``--multi_gpu --num_processes 2`` without
``ACCELERATE_USE_CPU=1`` starts two processes that never form a process group (each trains alone). With
``ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes N`` the N processes join one gloo process
group on the CPU, which is what a data-parallel test needs::

    ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes 2 train.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ACCELERATE_CPU_ENV", "accelerate_command", "free_port", "run_accelerate"]

#: Environment for CPU data-parallel runs: CPU processes, one thread each, no network, no GPU.
ACCELERATE_CPU_ENV: Mapping[str, str] = {
    "ACCELERATE_USE_CPU": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "CUDA_VISIBLE_DEVICES": "",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "MPLBACKEND": "Agg",
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free when asked (for ``--main_process_port``).

    Returns:
        A port number in the ephemeral range.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accelerate_command(
    script: str | os.PathLike[str],
    *args: str,
    num_processes: int = 2,
    port: int | None = None,
    python: str = sys.executable,
) -> list[str]:
    """The ``accelerate launch`` command line that runs ``script`` on ``num_processes`` CPU processes.

    Args:
        script: path of the Python script to launch.
        *args: arguments passed to the script.
        num_processes: number of processes (>= 1). With 1 the script runs as one plain process under accelerate.
        port: ``--main_process_port``; a free one is picked when ``None``.
        python: interpreter that runs accelerate (default: the current one, so the test's environment is used).

    Returns:
        The argument vector (run it with :data:`ACCELERATE_CPU_ENV` in the environment).

    Raises:
        ValueError: if ``num_processes`` is not a positive integer.

    Example:
        >>> cmd = accelerate_command("train.py", "--steps", "3", num_processes=2, port=29555, python="python")
        >>> cmd[:3], cmd[-3:]
        (['python', '-m', 'accelerate.commands.launch'], ['train.py', '--steps', '3'])
        >>> "--multi_gpu" in cmd
        True
    """
    if isinstance(num_processes, bool) or not isinstance(num_processes, int) or num_processes < 1:
        raise ValueError(f"num_processes must be a positive int, got {num_processes!r}")
    cmd = [python, "-m", "accelerate.commands.launch", "--num_machines", "1", "--num_processes", str(num_processes)]
    if num_processes > 1:
        cmd += ["--multi_gpu", "--main_process_port", str(free_port() if port is None else port)]
    cmd += ["--mixed_precision", "no", "--dynamo_backend", "no", str(script), *args]
    return cmd


_WRAPPER = """\
import runpy
import sys
from pathlib import Path

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = str(Path(script).parent)
runpy.run_path(script, run_name="__main__")
try:
    import torch.distributed as dist
except ImportError:
    dist = None
if dist is not None and dist.is_available() and dist.is_initialized():
    dist.barrier()
    dist.destroy_process_group()
"""


def run_accelerate(
    script: str | os.PathLike[str],
    *args: str,
    num_processes: int = 2,
    timeout: float = 300.0,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` under ``accelerate launch`` on ``num_processes`` CPU processes and wait for it.

    The processes form one gloo process group (see the module docstring for why ``ACCELERATE_USE_CPU=1`` and
    ``--multi_gpu`` are both needed without a GPU); each uses one thread.

    Args:
        script: path of the Python script.
        *args: arguments passed to the script.
        num_processes: number of processes (>= 1).
        timeout: seconds before the run is killed and counted as a failure.
        env: extra environment variables (on top of the current environment and :data:`ACCELERATE_CPU_ENV`).
        cwd: working directory of the run (default: the script's directory).

    Returns:
        The finished process, with ``stdout`` and ``stderr`` as text.

    Raises:
        AssertionError: if the run exits non-zero or times out; the message holds the command and both streams,
            so a failing test shows what every rank printed.
        ValueError: if ``num_processes`` is not a positive integer.
    """
    full_env = {**os.environ, **ACCELERATE_CPU_ENV, **(env or {})}
    workdir = Path(cwd) if cwd is not None else Path(script).resolve().parent
    with tempfile.TemporaryDirectory(prefix="nips25-launch-") as tmp:
        # every rank runs the script through a wrapper that tears the process group down after a barrier: a rank
        # that exits while another still holds gloo connections can abort ("terminate called without an active
        # exception", SIGABRT) after the script itself succeeded
        wrapper = Path(tmp) / "launch_script.py"
        wrapper.write_text(_WRAPPER)
        cmd = accelerate_command(wrapper, str(Path(script).resolve()), *args, num_processes=num_processes)
        try:
            proc = subprocess.run(
                cmd, env=full_env, cwd=workdir, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as err:
            raise AssertionError(
                f"accelerate run timed out after {timeout} s: {' '.join(cmd)}\n"
                f"--- stdout ---\n{_text(err.stdout)}\n--- stderr ---\n{_text(err.stderr)}"
            ) from err
    if proc.returncode != 0:
        raise AssertionError(
            f"accelerate run exited {proc.returncode}: {' '.join(cmd)}\n"
            f"--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"
        )
    return proc


def _text(stream: str | bytes | None) -> str:
    if stream is None:
        return ""
    return stream.decode(errors="replace") if isinstance(stream, bytes) else stream
