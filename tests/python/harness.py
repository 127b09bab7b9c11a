"""What the Python tests share: checks that record their failures instead of stopping at the
first, and the exit code CTest reads (0 passed, 1 failed; 77, skipped, is each test's own)."""

failures = []


def check(cond, what, show_passes=False):
    """Records `what` as failed unless `cond`; prints failures, and passes if asked."""
    if show_passes:
        print(("ok  " if cond else "FAIL") + " " + what)
    elif not cond:
        print("FAIL:", what)
    if not cond:
        failures.append(what)


def exit_code():
    """1 (and the count printed) when a check failed, else 0."""
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0
