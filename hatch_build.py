"""Build hook: ship the content (exercises, references, graders, templates, wrong variants) inside
the wheel as ``inferprep/_content`` — but only in a real wheel. An editable install finds the
content in the checkout; copying it into site-packages would put the hidden graders and references
inside the venv, which the sandbox must reveal so that submissions can import torch."""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

CONTENT = {
    "exercises": "inferprep/_content/exercises",
    "reference": "inferprep/_content/reference",
    "graders": "inferprep/_content/graders",
    "templates": "inferprep/_content/templates",
    "tests/wrong": "inferprep/_content/tests/wrong",
}


class ContentHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if version == "standard":
            build_data.setdefault("force_include", {}).update(CONTENT)
