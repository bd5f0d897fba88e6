"""The training job definitions of a tuning job: its one TrainingJobDefinition, or each of its
TrainingJobDefinitions (several algorithms tuned in one job, "Tune multiple algorithms with
hyperparameter optimization"), each seen as a search of its own.

A definition of TrainingJobDefinitions carries its own TuningObjective and HyperParameterRanges,
where a lone TrainingJobDefinition takes HyperParameterTuningJobConfig's objective and
ParameterRanges; `Definition.config` is the tuning config with the definition's objective and
ranges in place, so the strategies, Grid's checks and Hyperband read either alike. `problems`
checks the two forms at create (tuning/requests.py checks each definition then)."""

from dataclasses import dataclass

from tuning import ranges

SEVERAL = "TrainingJobDefinitions"
# The name of a lone TrainingJobDefinition's training jobs' definition (it has none).
LONE = ""
# What a lone TrainingJobDefinition takes from HyperParameterTuningJobConfig instead.
LONE_DEFINITION_MEMBERS = {
    "DefinitionName": "it names one of several TrainingJobDefinitions",
    "TuningObjective": "give HyperParameterTuningJobConfig.HyperParameterTuningJobObjective",
    "HyperParameterRanges": "give HyperParameterTuningJobConfig.ParameterRanges",
}
# What each of several TrainingJobDefinitions gives itself instead of HyperParameterTuningJobConfig.
PER_DEFINITION_MEMBERS = {
    "HyperParameterTuningJobObjective": "TuningObjective",
    "ParameterRanges": "HyperParameterRanges",
}


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


def problems(request: dict) -> list[str]:
    """What is wrong with the request's definitions as a whole (botocore's shape already holds at
    most 10): exactly one of TrainingJobDefinition and TrainingJobDefinitions, and the members
    each form needs."""
    if "TrainingJobDefinition" in request and several(request):
        return ["Specify either TrainingJobDefinition or TrainingJobDefinitions, not both."]
    if several(request):
        return _several_problems(request[SEVERAL], request["HyperParameterTuningJobConfig"])
    if "TrainingJobDefinition" not in request:
        return ["TrainingJobDefinition or TrainingJobDefinitions is required."]
    return _lone_problems(request["TrainingJobDefinition"], request["HyperParameterTuningJobConfig"])


def _lone_problems(body: dict, config: dict) -> list[str]:
    found = [f"TrainingJobDefinition.{member} is not allowed with one TrainingJobDefinition: {why}."
             for member, why in LONE_DEFINITION_MEMBERS.items() if member in body]
    if "HyperParameterTuningJobObjective" not in config:
        found.append("HyperParameterTuningJobConfig.HyperParameterTuningJobObjective is required.")
    return found


def _several_problems(bodies: list[dict], config: dict) -> list[str]:
    """Each definition named (uniquely), with its own objective (all of one Type) and ranges."""
    found = [f"With TrainingJobDefinitions, HyperParameterTuningJobConfig.{member} is not allowed: each "
             f"training job definition gives its {own}." for member, own in PER_DEFINITION_MEMBERS.items()
             if member in config]
    for index, body in enumerate(bodies, start=1):
        missing = [member for member in LONE_DEFINITION_MEMBERS if member not in body]
        if missing:
            found.append(f"TrainingJobDefinitions member {index} needs {', '.join(missing)}.")
    names = [body["DefinitionName"] for body in bodies if "DefinitionName" in body]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        found.append(f"Training job definition names must be unique: {', '.join(repeated)} repeated.")
    if len({body["TuningObjective"]["Type"] for body in bodies if "TuningObjective" in body}) > 1:
        found.append("Every training job definition's TuningObjective must have the same Type "
                     "(Maximize or Minimize).")
    return found


def of(request: dict) -> list[Definition]:
    """The definitions of a request whose definitions were checked (`problems`)."""
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
