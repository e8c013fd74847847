# Shared by the runner cases that first switch off the harness's audit hook (placeholder {UNHOOK}):
# the hook is diagnostics, reachable through gc, so every layer that matters must hold without it.
import gc as _gc


def _unhook():
    n = 0
    for f in _gc.get_objects():
        if type(f).__name__ == "function" and f.__name__ in ("hook", "under", "within") and f.__closure__:
            for cell in f.__closure__:
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue
                if isinstance(v, set):
                    v.clear()
                    n += 1
                elif isinstance(v, tuple):
                    cell.cell_contents = ()
                    n += 1
    print("HOOK_CELLS_EMPTIED", n)
    return n


_unhook()
