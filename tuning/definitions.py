"""The training job definitions of a tuning job: its one TrainingJobDefinition, or each of its
TrainingJobDefinitions (several algorithms tuned in one job, "Tune multiple algorithms with
hyperparameter optimization"), each seen as a search of its own.

A definition of TrainingJobDefinitions carries its own TuningObjective and HyperParameterRanges,
where a lone TrainingJobDefinition takes HyperParameterTuningJobConfig's objective and
ParameterRanges; `Definition.config` is the tuning config with the definition's objective and
ranges in place, so the strategies, Grid's checks and Hyperband read either alike."""

from dataclasses import dataclass

from tuning import ranges

SEVERAL = "TrainingJobDefinitions"
# The name of a lone TrainingJobDefinition's training jobs' definition (it has none).
LONE = ""


@dataclass(frozen=True)
class Definition:
    name: str  # DefinitionName; LONE for a lone TrainingJobDefinition
    body: dict  # the definition as the request gives it
    config: dict  # HyperParameterTuningJobConfig with this definition's objective and ranges

    @property
    def objective(self) -> dict:
        return self.config["HyperParameterTuningJobObjective"]

    @property
    def static(self) -> dict[str, str]:
        return self.body.get("StaticHyperParameters", {})

    def parsed(self) -> list[ranges.Range]:
        found, _ = ranges.parse(self.config.get("ParameterRanges"))
        return found


def several(request: dict) -> bool:
    return SEVERAL in request


def of(request: dict) -> list[Definition]:
    """The definitions of a request whose definitions were checked (tuning/requests.py)."""
    config = request["HyperParameterTuningJobConfig"]
    if not several(request):
        return [Definition(LONE, request["TrainingJobDefinition"], config)]
    return [
        Definition(
            body["DefinitionName"],
            body,
            {
                **config,
                "HyperParameterTuningJobObjective": body["TuningObjective"],
                "ParameterRanges": body.get("HyperParameterRanges"),
            },
        )
        for body in request[SEVERAL]
    ]


def named(request: dict, name: str) -> Definition:
    """The definition a training job was launched from (its row's `definition_name`)."""
    return next(definition for definition in of(request) if definition.name == name)


def objective_type(request: dict) -> str:
    """Maximize or Minimize: every definition's objective has the same Type (checked at create)."""
    return of(request)[0].objective["Type"]
