"""The README's boto3 example is examples/quickstart.py, verbatim, and the data it uploads fits
the example trainer (tests/e2e/test_quickstart.py runs it against a live stack)."""
import importlib.util

import numpy as np

from devstack.stack import PROJECT_DIR

QUICKSTART = PROJECT_DIR / "examples" / "quickstart.py"
TRAIN_CSV = PROJECT_DIR / "examples" / "linear_regression" / "train.csv"


def readme_quickstart() -> str:
    readme = (PROJECT_DIR / "README.md").read_text()
    block = readme.split("<!-- quickstart:begin -->\n", 1)[1].split("<!-- quickstart:end -->", 1)[0]
    return block.removeprefix("```python\n").removesuffix("```\n")


def load_trainer():
    spec = importlib.util.spec_from_file_location(
        "example_train", PROJECT_DIR / "examples" / "linear_regression" / "train.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_shows_the_quickstart_script_verbatim():
    assert readme_quickstart() == QUICKSTART.read_text()


def test_the_readme_names_the_shipped_data_and_the_script():
    readme = (PROJECT_DIR / "README.md").read_text()

    assert "examples/linear_regression/train.csv" in QUICKSTART.read_text()
    assert "source .sageport/env && .venv/bin/python examples/quickstart.py" in readme


def test_the_shipped_data_trains_the_example_model_exactly():
    data = np.loadtxt(TRAIN_CSV, delimiter=",", ndmin=2)  # as train.py reads it

    model = load_trainer().fit(data, fit_intercept=True, l2=0.0)

    assert np.allclose(model["coefficients"], [2.0, -3.0])
    assert np.isclose(model["intercept"], 0.5)
    assert model["rows"] == len(data) == 24
