"""The README's quick starts are examples/quickstart.py and examples/quickstart_endpoint.py,
verbatim, and the data the first uploads fits the example trainer (tests/e2e/test_quickstart.py
runs both against a live stack; the docs site's home page includes the files themselves)."""
import importlib.util

import numpy as np

from devstack.stack import PROJECT_DIR

QUICKSTART = PROJECT_DIR / "examples" / "quickstart.py"
QUICKSTART_ENDPOINT = PROJECT_DIR / "examples" / "quickstart_endpoint.py"
TRAIN_CSV = PROJECT_DIR / "examples" / "linear_regression" / "train.csv"


def readme_block(marker: str) -> str:
    readme = (PROJECT_DIR / "README.md").read_text()
    block = readme.split(f"<!-- {marker}:begin -->\n", 1)[1].split(f"<!-- {marker}:end -->", 1)[0]
    return block.removeprefix("```python\n").removesuffix("```\n")


def load_trainer():
    spec = importlib.util.spec_from_file_location(
        "example_train", PROJECT_DIR / "examples" / "linear_regression" / "train.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_shows_the_quickstart_scripts_verbatim():
    assert readme_block("quickstart") == QUICKSTART.read_text()
    assert readme_block("quickstart-endpoint") == QUICKSTART_ENDPOINT.read_text()


def test_the_readme_names_the_shipped_data_and_the_script():
    readme = (PROJECT_DIR / "README.md").read_text()

    assert "examples/linear_regression/train.csv" in QUICKSTART.read_text()
    assert "source .sageport/env && .venv/bin/python examples/quickstart.py" in readme
    assert "source .sageport/env && .venv/bin/python examples/quickstart_endpoint.py" in readme


def test_the_shipped_data_trains_the_example_model_exactly():
    data = np.loadtxt(TRAIN_CSV, delimiter=",", ndmin=2)  # as train.py reads it

    model = load_trainer().fit(data, fit_intercept=True, l2=0.0)

    assert np.allclose(model["coefficients"], [2.0, -3.0])
    assert np.isclose(model["intercept"], 0.5)
    assert model["rows"] == len(data) == 24
