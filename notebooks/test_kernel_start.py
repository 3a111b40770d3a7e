"""A notebook whose kernel dies before it answers is run on a new kernel
(``patient_kernel.py``, installed by the checkout's root ``conftest.py``).

The client is read from nbmake, where it was put.
"""

from __future__ import annotations

import nbformat
import pytest
from jupyter_client.asynchronous.client import AsyncKernelClient
from nbmake import nb_run
from nbmake.nb_run import NotebookRun

#: What jupyter_client raises when the kernel process exits before its first answer (a port
#: taken between the parent's choice and the kernel's bind: ZMQError, Address already in use).
DIED = "Kernel died before replying to kernel_info"


def _notebook(tmp_path):
    path = tmp_path / "two.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("print(1 + 1)"))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def _dies_first(monkeypatch, times: int) -> list[int]:
    """The first ``times`` kernels die before they answer; returns the count of waits."""
    waits = [0]
    ready = AsyncKernelClient.wait_for_ready

    async def wait_for_ready(self, timeout=None):
        waits[0] += 1
        if waits[0] <= times:
            raise RuntimeError(DIED)
        return await ready(self, timeout=timeout)

    monkeypatch.setattr(AsyncKernelClient, "wait_for_ready", wait_for_ready)
    return waits


def test_nbmake_runs_notebooks_with_the_patient_client():
    client = nb_run.NotebookClient(nbformat.v4.new_notebook())
    assert type(client).__name__ == "PatientClient"
    # 300 s for a kernel to answer, five times nbclient's 60; three starts in all
    assert client.startup_timeout == 300 and client.kernel_starts == 3


@pytest.mark.slow  # starts three kernels, a second or two each
def test_a_kernel_that_dies_before_it_answers_is_started_again(tmp_path, monkeypatch):
    starts = nb_run.NotebookClient.kernel_starts
    waits = _dies_first(monkeypatch, starts - 1)
    result = NotebookRun(_notebook(tmp_path), default_timeout=120).execute()
    # Two kernels died (starts - 1 = 2); the third ran the cell: 1 + 1 = 2.
    assert waits[0] == starts and result.error is None
    assert result.nb.cells[0].outputs[0]["text"] == "2\n"


@pytest.mark.slow
def test_a_kernel_that_never_answers_fails_after_the_last_start(tmp_path, monkeypatch):
    starts = nb_run.NotebookClient.kernel_starts
    waits = _dies_first(monkeypatch, starts)
    with pytest.raises(RuntimeError, match=DIED):
        NotebookRun(_notebook(tmp_path), default_timeout=120).execute()
    assert waits[0] == starts
