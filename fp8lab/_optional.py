"""Optional dependencies: imported on first use, with an error that names the extra to install.

``import fp8lab`` needs only numpy and ml_dtypes. torch, matplotlib, ipywidgets and nbgrader are
imported the first time something uses them, so the command line starts fast and the core works
where they are not installed. :data:`torch` is a stand-in module whose first attribute access
imports torch.

>>> "matplotlib" in EXTRAS and EXTRAS["matplotlib"]
'course'
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

__all__ = ["EXTRAS", "require", "missing_extra", "LazyModule", "torch", "torch_loaded", "torch_available"]

#: Which ``pip install 'fp8lab[extra]'`` brings each optional module.
EXTRAS: dict[str, str] = {
    "torch": "torch",
    "matplotlib": "course",
    "ipywidgets": "course",
    "IPython": "course",
    "nbformat": "course",
    "nbclient": "course",
    "nbgrader": "labs",
    "gfloat": "dev",
    "hypothesis": "dev",
    "pytest": "dev",
}


def require(module: str, feature: str | None = None) -> ModuleType:
    """Import ``module``, or raise an ImportError that names the fp8lab extra providing it.

    >>> require("math").sqrt(4.0)
    2.0
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(_needs(module.split(".")[0], feature)) from e


def _needs(top: str, feature: str | None) -> str:
    extra = EXTRAS.get(top)
    what = feature or "this part of fp8lab"
    hint = f"pip install 'fp8lab[{extra}]'" if extra else f"pip install {top}"
    return f"{what} needs {top}, which is not installed: {hint}"


def missing_extra(err: BaseException, feature: str | None = None) -> str | None:
    """The message naming the extra to install for an ImportError of an optional module (None for any other error).

    An ImportError raised by :func:`require` already names it and is returned as it is; a bare
    ``No module named 'torch'`` (an import that did not go through :func:`require`) gets the same wording.

    >>> missing_extra(ModuleNotFoundError("No module named 'torch.nn'", name="torch.nn"), "fp8lab train")
    "fp8lab train needs torch, which is not installed: pip install 'fp8lab[torch]'"
    >>> missing_extra(ValueError("x")) is None
    True
    """
    if not isinstance(err, ImportError):
        return None
    if "which is not installed: pip install" in str(err):
        return str(err)
    top = (getattr(err, "name", None) or "").split(".")[0]
    if isinstance(err, ModuleNotFoundError) and top and top != "fp8lab":  # fp8lab's own module missing is a bug
        return _needs(top, feature)
    return None


class LazyModule(ModuleType):
    """A module stand-in that imports the real module on first attribute access and then delegates to it.

    Attributes are looked up on the real module every time (not copied), so a test that monkeypatches
    the real module is seen through the stand-in too. On that first access, fp8lab's modules that hold
    the stand-in as a global get the real module in its place, so hot code pays no indirection after
    the first use (and still sees a monkeypatched attribute: it reads the real module).

    >>> m = LazyModule("json"); m.dumps([1])
    '[1]'
    """

    def __init__(self, name: str, feature: str | None = None) -> None:
        super().__init__(name)
        self._feature = feature
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__") and attr != "__version__":
            raise AttributeError(attr)  # introspection (doctest, inspect) must not import the real module
        mod = self._module
        if mod is None:
            mod = self._module = require(self.__name__, self._feature)
            self._rebind(mod)
        return getattr(mod, attr)

    def _rebind(self, mod: ModuleType) -> None:
        """Replace this stand-in by ``mod`` wherever an fp8lab module holds it as a global."""
        for name, m in list(sys.modules.items()):
            if m is None or not (name == "fp8lab" or name.startswith("fp8lab.")):
                continue
            for key, value in list(vars(m).items()):
                if value is self:
                    setattr(m, key, mod)

    def __repr__(self) -> str:
        return f"<lazy module {self.__name__!r}>"


#: torch, imported on first use ("torch tensors in fp8lab" need the ``torch`` extra).
torch = LazyModule("torch", "torch tensor support")


def torch_loaded() -> bool:
    """Whether torch has been imported in this process (then tensors may exist).

    >>> isinstance(torch_loaded(), bool)
    True
    """
    return "torch" in sys.modules


def torch_available() -> bool:
    """Whether torch can be imported (imports it if it is installed).

    >>> isinstance(torch_available(), bool)
    True
    """
    try:
        importlib.import_module("torch")
    except ImportError:
        return False
    return True
