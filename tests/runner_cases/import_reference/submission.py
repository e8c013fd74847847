import importlib.util

spec = importlib.util.spec_from_file_location("ref", "{REFERENCE_PATH}")
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)
add = ref.add
