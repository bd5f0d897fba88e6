"""A small, real SageMaker training algorithm: least-squares linear regression with numpy.

Reads every CSV file of the `train` channel (last column = target, the others = features, no
header), fits y ~ X·w + b, and writes /opt/ml/model/model.json with the coefficients. Bad input
is described in /opt/ml/output/failure and the exit status is 1, as SageMaker expects.

Hyperparameters (/opt/ml/input/config/hyperparameters.json, all strings as SageMaker sends them):
  fit_intercept  "true" (default) or "false"
  l2             ridge penalty, default "0"
"""
import json
import signal
import sys
from pathlib import Path

import numpy as np

PREFIX = Path("/opt/ml")
TRAIN_CHANNEL = PREFIX / "input" / "data" / "train"
HYPERPARAMETERS = PREFIX / "input" / "config" / "hyperparameters.json"
MODEL_FILE = PREFIX / "model" / "model.json"
FAILURE_FILE = PREFIX / "output" / "failure"


class BadInput(Exception):
    """The job's data or hyperparameters cannot be used; the message is shown to the user."""


def read_hyperparameters() -> tuple[bool, float]:
    raw = json.loads(HYPERPARAMETERS.read_text()) if HYPERPARAMETERS.exists() else {}
    fit_intercept = raw.get("fit_intercept", "true").lower()
    if fit_intercept not in ("true", "false"):
        raise BadInput(f"fit_intercept must be true or false, got {fit_intercept!r}")
    try:
        l2 = float(raw.get("l2", "0"))
    except ValueError:
        raise BadInput(f"l2 must be a number, got {raw['l2']!r}") from None
    if l2 < 0:
        raise BadInput(f"l2 must not be negative, got {l2}")
    return fit_intercept == "true", l2


def read_training_data() -> np.ndarray:
    files = sorted(path for path in TRAIN_CHANNEL.rglob("*.csv") if path.is_file())
    if not files:
        raise BadInput(f"no .csv file in the train channel ({TRAIN_CHANNEL})")
    try:
        blocks = [np.loadtxt(path, delimiter=",", ndmin=2) for path in files]
        data = np.vstack(blocks)
    except ValueError as error:
        raise BadInput(f"the training data is not a numeric CSV table: {error}") from None
    if data.shape[1] < 2 or data.shape[0] < data.shape[1]:
        raise BadInput(f"need feature columns, a target column and enough rows, got shape {data.shape}")
    return data


def fit(data: np.ndarray, fit_intercept: bool, l2: float) -> dict:
    features, target = data[:, :-1], data[:, -1]
    design = np.hstack([features, np.ones((len(features), 1))]) if fit_intercept else features
    # Ridge via an augmented least-squares system; l2 = 0 is ordinary least squares.
    penalty = np.sqrt(l2) * np.eye(design.shape[1])
    if fit_intercept:
        penalty[-1, -1] = 0.0  # the intercept is not penalised
    augmented_target = np.concatenate([target, np.zeros(design.shape[1])])
    solution, *_ = np.linalg.lstsq(np.vstack([design, penalty]), augmented_target, rcond=None)
    weights, intercept = (solution[:-1], solution[-1]) if fit_intercept else (solution, 0.0)
    residual = target - design @ solution
    return {
        "coefficients": weights.tolist(),
        "intercept": float(intercept),
        "rows": int(len(target)),
        "mse": float(np.mean(residual**2)),
    }


def stop_on_sigterm(signum, frame):
    # StopTrainingJob sends SIGTERM; this fit is quick, so there is nothing partial to save.
    sys.exit(143)


def main() -> int:
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        fit_intercept, l2 = read_hyperparameters()
        model = fit(read_training_data(), fit_intercept, l2)
    except BadInput as error:
        FAILURE_FILE.parent.mkdir(parents=True, exist_ok=True)
        FAILURE_FILE.write_text(str(error))
        print(f"training failed: {error}", file=sys.stderr)
        return 1
    MODEL_FILE.parent.mkdir(parents=True, exist_ok=True)
    MODEL_FILE.write_text(json.dumps(model, indent=2))
    print(f"trained on {model['rows']} rows: coefficients={model['coefficients']} "
          f"intercept={model['intercept']:.6g} mse={model['mse']:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
