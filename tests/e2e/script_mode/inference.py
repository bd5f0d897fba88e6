"""An inference entry point: the SDK repacks it into the model archive under code/."""


def model_fn(model_dir):
    return open(f"{model_dir}/weights.txt").read()
