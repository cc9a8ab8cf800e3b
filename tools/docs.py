"""Build the user manual (docs/) into a website with MkDocs.

usage: python3 tools/docs.py [--out site] [--strict]
The site goes to site/ (ignored by git) unless --out names another folder. MkDocs is installed the first time into
its own virtual environment, ${ENVFX_VENV_DIR:-.venvs}/docs, so any Python 3 runs this. --strict fails on a broken
link or anchor (the tests build with it). Exit codes: 0 built, 1 the build failed, 3 MkDocs could not be installed.
"""

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MKDOCS = "mkdocs==1.6.1"
NO_MKDOCS = 3


def venv_dir() -> str:
    return os.path.join(os.environ.get("ENVFX_VENV_DIR") or os.path.join(ROOT, ".venvs"), "docs")


def mkdocs_python() -> str:
    """The venv's python with MkDocs installed (made the first time; SystemExit(3) when that fails)."""
    venv = venv_dir()
    python = os.path.join(venv, "Scripts" if os.name == "nt" else "bin", "python")
    stamp = os.path.join(venv, ".envfx-ready-" + MKDOCS)
    if os.path.isfile(stamp):
        return python
    print(f"Setting up {venv} ({MKDOCS})...", file=sys.stderr)
    try:
        if not os.path.isfile(python):
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", MKDOCS],
                       check=True, stdout=sys.stderr)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"tools/docs.py: could not install {MKDOCS} into {venv}: {exc}", file=sys.stderr)
        raise SystemExit(NO_MKDOCS) from None
    open(stamp, "w").close()
    return python


def build(out: str, strict: bool = False) -> int:
    python = mkdocs_python()
    # not --quiet: it hides the warnings that --strict counts, so a broken link would pass
    command = [python, "-m", "mkdocs", "build", "--clean", "--config-file",
               os.path.join(ROOT, "mkdocs.yml"), "--site-dir", os.path.abspath(out)]
    if strict:
        command.append("--strict")
    return 0 if subprocess.run(command, cwd=ROOT).returncode == 0 else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="tools/docs.py", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "site"), help="folder the site is written to (site/)")
    parser.add_argument("--strict", action="store_true", help="fail on a broken link or anchor")
    args = parser.parse_args(argv)
    if not args.out.strip():
        parser.error("--out is empty: give a folder")
    status = build(args.out, args.strict)
    if status == 0:
        print(os.path.abspath(args.out))
    return status


if __name__ == "__main__":
    sys.exit(main())
