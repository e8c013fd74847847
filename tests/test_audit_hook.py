"""The harness's audit hook (the only file-system guard when bubblewrap is absent): a secret root
stays closed even inside a revealed tree; a revealed tree inside a hidden one stays open."""

import subprocess
import sys
import textwrap

from runner_support import ROOT


def test_hidden_reveal_secret(tmp_path):
    hidden = tmp_path / "home"
    reveal = hidden / "python"
    secret = reveal / "site-packages" / "inferprep" / "_content" / "reference"
    secret.mkdir(parents=True)
    (secret / "ref.py").write_text("HIDDEN_CASE_42")
    (reveal / "lib.py").write_text("ok")
    (hidden / "key").write_text("private")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT / 'platform')!r})
        from inferprep.runner.harness import _install_audit_hook
        _install_audit_hook([{str(hidden)!r}], [{str(secret)!r}], [{str(reveal)!r}])
        def can(p):
            try:
                open(p).read()
                return True
            except PermissionError:
                return False
        print(can({str(reveal / 'lib.py')!r}), can({str(hidden / 'key')!r}), can({str(secret / 'ref.py')!r}),
              can({str(secret / '..' / 'reference' / 'ref.py')!r}))
        import subprocess
        try:
            subprocess.run(["true"])
            print("spawned")
        except PermissionError:
            print("no-spawn")
    """)
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False", "False", "False", "no-spawn"]
