"""--mem-limit on Windows: the child goes into a job object capped at the limit (mocked kernel32)."""
import ctypes

import pytest

from harness.measure import limits


class FakeKernel32:
    def __init__(self, fail: str | None = None):
        self.fail, self.calls, self.info = fail, [], None

    def _result(self, name, value):
        self.calls.append(name)
        return 0 if self.fail == name else value

    def CreateJobObjectW(self, attributes, name):
        return self._result("CreateJobObjectW", 101)

    def SetInformationJobObject(self, job, info_class, info_ref, size):
        self.info = ctypes.cast(info_ref, ctypes.POINTER(limits.ExtendedLimits)).contents
        assert info_class == 9 and size == ctypes.sizeof(limits.ExtendedLimits)
        return self._result("SetInformationJobObject", 1)

    def OpenProcess(self, access, inherit, pid):
        self.pid = pid
        return self._result("OpenProcess", 202)

    def AssignProcessToJobObject(self, job, process):
        assert (job, process) == (101, 202)
        return self._result("AssignProcessToJobObject", 1)

    def CloseHandle(self, handle):
        self.calls.append("CloseHandle")
        return 1


def test_the_child_is_assigned_to_a_job_capped_at_the_limit():
    kernel32 = FakeKernel32()
    assert limits.cap_process_memory(4321, 2 * 2**30, kernel32) == 101
    assert kernel32.pid == 4321
    assert kernel32.info.ProcessMemoryLimit == 2 * 2**30
    assert kernel32.info.BasicLimitInformation.LimitFlags & limits.JOB_OBJECT_LIMIT_PROCESS_MEMORY
    assert kernel32.calls[-2:] == ["AssignProcessToJobObject", "CloseHandle"]


@pytest.mark.parametrize("step", ["CreateJobObjectW", "SetInformationJobObject", "OpenProcess",
                                  "AssignProcessToJobObject"])
def test_a_failed_step_is_an_error_not_a_silent_uncapped_run(step):
    with pytest.raises(OSError, match=step):
        limits.cap_process_memory(4321, 2**30, FakeKernel32(fail=step))
