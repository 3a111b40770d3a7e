"""The notebooks run as tests (``--nbmake``): a kernel that starts late, or dies before it
answers, is waited for longer and started again, instead of failing the notebook. The
checkout's root ``conftest.py`` installs it (a second ``conftest.py`` among the test paths
would clash with the tests' own under ``--doctest-modules``, which imports each by its name).

Why. A notebook's kernel is a new Python process. nbclient waits 60 s for it to answer
(``NotebookClient.startup_timeout``), and jupyter_client chooses the kernel's five TCP ports
by binding and releasing them in the parent before the kernel binds them again. On a busy
machine (the test suite's own solves, other kernels starting at once) the kernel can answer
after the 60 s, or find one of its ports taken in between and exit with a ZMQ error ("Address
already in use"): ``06-workload.ipynb`` once failed with a ZMQ socket error so. nbmake sets
only the cells' timeout (``--nbmake-timeout``, in ``pyproject.toml``) and the kernel's name,
not the start-up wait, so its client is replaced here by :class:`PatientClient`: it waits
:data:`STARTUP_TIMEOUT_S` for a kernel and, when the kernel dies or stays silent before it
answers, starts a new one (new ports) up to :data:`KERNEL_STARTS` times in all. Only the
kernel's start is tried again: an error in a cell fails the notebook at once, as before.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any

import nbmake.nb_run
import zmq
from nbclient.client import NotebookClient
from traitlets import Integer

#: Seconds to wait for a new kernel to answer (nbclient's default is 60).
STARTUP_TIMEOUT_S = 300
#: Kernel starts in all before the notebook fails: the first and two more.
KERNEL_STARTS = 3

_log = logging.getLogger(__name__)


class PatientClient(NotebookClient):
    """nbclient's notebook runner with a longer start-up wait and a kernel started again when
    it dies or stays silent before its first answer (the module docstring says why)."""

    startup_timeout = Integer(STARTUP_TIMEOUT_S, help="Seconds to wait for the kernel to "
                              "start (nbclient's default is 60)").tag(config=True)
    #: Kernel starts in all (:data:`KERNEL_STARTS`).
    kernel_starts = KERNEL_STARTS

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        self._start_options = kwargs  # the same (cwd) for a kernel started again
        await super().async_start_new_kernel(**kwargs)

    async def async_start_new_kernel_client(self) -> Any:
        for start in range(1, self.kernel_starts + 1):
            try:
                return await super().async_start_new_kernel_client()
            except (RuntimeError, TimeoutError, zmq.ZMQError) as exc:
                # nbclient has shut the kernel down and dropped its manager; a manager given
                # by the caller is the caller's to restart.
                if start == self.kernel_starts or not self.owns_km:
                    # nbclient's exit hook would clean up the manager it dropped: say nothing
                    # more at exit than the error raised now
                    atexit.unregister(self._cleanup_kernel)
                    raise
                _log.warning("kernel start %d of %d failed (%s); starting a new kernel",
                             start, self.kernel_starts, exc)
                self.km = self.create_kernel_manager()
                await self.async_start_new_kernel(**getattr(self, "_start_options", {}))
        raise AssertionError("unreachable")  # the loop returns or raises


def use_patient_client() -> None:
    """Make nbmake run every notebook with :class:`PatientClient`."""
    nbmake.nb_run.NotebookClient = PatientClient
