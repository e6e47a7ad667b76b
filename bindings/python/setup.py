"""Puts the shared library into the wheel: `build_py` copies it next to the package's code, and
the wheel is tagged `py3-none-<platform>` because it carries native code for one platform.

The library is `$VOUCH_LIBRARY` when set, else the repository's `target/release` build output
(`cargo build --release -p vouch-ffi`). Building without it is an error that says so.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
LIBRARY_NAME = {"darwin": "libvouch.dylib", "win32": "vouch.dll"}.get(sys.platform, "libvouch.so")


def library() -> Path:
    from_env = os.environ.get("VOUCH_LIBRARY")
    path = Path(from_env) if from_env else HERE.parent.parent / "target" / "release" / LIBRARY_NAME
    if not path.is_file():
        raise SystemExit(
            f"vouch: the shared library is not at {path}; build it first with "
            "`cargo build --release -p vouch-ffi` (or set VOUCH_LIBRARY)"
        )
    return path


class BuildWithLibrary(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "vouch" / LIBRARY_NAME
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(library(), target)


class PlatformWheel(bdist_wheel):
    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel})
