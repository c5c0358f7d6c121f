"""nips25_shared.testing: the accelerate command line, and (where torch is installed) a real 2-process group."""

import importlib.util
import re
import textwrap

import pytest

from nips25_shared.testing import ACCELERATE_CPU_ENV, accelerate_command, free_port, run_accelerate

HAS_ACCELERATE = importlib.util.find_spec("accelerate") is not None and importlib.util.find_spec("torch") is not None


def test_command_multi_process_uses_multi_gpu_with_a_port():
    cmd = accelerate_command("s.py", "--x", "1", num_processes=2, port=1234, python="py")
    assert cmd[:3] == ["py", "-m", "accelerate.commands.launch"]
    assert cmd[cmd.index("--num_processes") + 1] == "2"
    assert cmd[cmd.index("--main_process_port") + 1] == "1234"
    assert "--multi_gpu" in cmd and "--cpu" not in cmd
    assert cmd[-3:] == ["s.py", "--x", "1"]


def test_command_single_process_has_no_multi_gpu():
    cmd = accelerate_command("s.py", num_processes=1, python="py")
    assert "--multi_gpu" not in cmd and "--main_process_port" not in cmd


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_command_rejects_bad_num_processes(bad):
    with pytest.raises(ValueError, match="num_processes"):
        accelerate_command("s.py", num_processes=bad)


def test_cpu_env_forces_cpu_and_one_thread():
    assert ACCELERATE_CPU_ENV["ACCELERATE_USE_CPU"] == "1"
    assert ACCELERATE_CPU_ENV["OMP_NUM_THREADS"] == "1"


def test_free_port_is_bindable():
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_failing_script_raises_with_its_output(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("import sys\nprint('out-line')\nsys.exit(3)\n")
    if not HAS_ACCELERATE:
        pytest.skip("accelerate and torch are not installed")
    with pytest.raises(AssertionError, match="exited"):
        run_accelerate(script, num_processes=1, timeout=120)


@pytest.mark.skipif(not HAS_ACCELERATE, reason="accelerate and torch are not installed")
def test_two_processes_form_one_group(tmp_path):
    script = tmp_path / "group.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from pathlib import Path

            import torch
            from accelerate import Accelerator

            acc = Accelerator()
            value = torch.tensor([float(acc.process_index + 1)])
            total = acc.reduce(value, reduction="sum")
            print(f"RANK {acc.process_index} of {acc.num_processes} device {acc.device} total {total.item()}")
            if __name__ == "__main__" and acc.is_main_process:  # run as a script, with its own argv and path
                print(f"ARGV {sys.argv[1:]} FILE {Path(__file__).name} PATH0 {Path(sys.path[0]).name}")
            """
        )
    )
    proc = run_accelerate(script, "a", "--b", num_processes=2, timeout=240)
    assert f"ARGV ['a', '--b'] FILE group.py PATH0 {tmp_path.name}" in proc.stdout
    # the two ranks share one stdout pipe, so their lines may interleave: find each rank's record
    records = sorted(re.findall(r"RANK (\d) of (\d) device (\S+?) total ([0-9.]+)", proc.stdout))
    assert [(r, n, t) for r, n, _, t in records] == [("0", "2", "3.0"), ("1", "2", "3.0")]
    assert all(device.startswith("cpu") for _, _, device, _ in records)
