"""A module one runtime lacks (Airflow on MWAA: numpy, pandas, pyspark) stands in until used, then
names itself (eo/core/optional.py); the declarations import there."""

import subprocess
import sys

import pytest

from eo.core.optional import Missing, module
from eo.runtime.config import REPO_ROOT


@pytest.mark.unit
def test_an_installed_module_is_itself_and_a_missing_one_names_itself_at_first_use():
    import pyarrow

    assert module("pyarrow") is pyarrow
    missing = module("no_such_module_here")
    assert isinstance(missing, Missing)
    with pytest.raises(ModuleNotFoundError, match=r"^no_such_module_here is not installed here \(array asked for\)"):
        missing.array([1])


@pytest.mark.integration  # a subprocess: the modules hidden from a Python of its own
def test_the_declarations_import_where_neither_pandas_numpy_nor_pyspark_is():
    """As Airflow on MWAA imports them: a Python that finds none of the three."""
    hide = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('numpy', 'pandas', 'pyspark'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from eo.core.tables import GOLD\n"
        "print(sorted(t.name for t in GOLD))\n"
    )
    done = subprocess.run([sys.executable, "-c", hide], cwd=REPO_ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "user_sessions" in done.stdout
