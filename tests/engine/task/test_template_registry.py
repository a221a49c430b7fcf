"""The template registry lives in its own module; every name it had in ``task`` (and on the
public faces) is still importable from there and is the same object."""

from __future__ import annotations

import tunecli.autotvm as autotvm_face
import tunecli.autotvm.task as task_face
import tunecli.autotvm.task.task as task_task_face
from tunecli.engine.task import task, template_registry

MOVED = ("TASK_TABLE", "MissingTask", "TaskTemplate", "TemplateFunc", "TemplateResult", "ReferenceFunc",
         "BUILTIN_PACKAGE", "get_config", "register", "register_template", "template")


def test_every_moved_name_is_importable_from_task_as_the_same_object() -> None:
    for name in MOVED:
        assert getattr(task, name) is getattr(template_registry, name), name
        assert name in task.__all__, name


def test_the_faces_give_the_registry_functions() -> None:
    assert autotvm_face.template is template_registry.template
    assert autotvm_face.get_config is template_registry.get_config
    for face in (task_face, task_task_face):
        assert face.register is template_registry.register
        assert face.template is template_registry.template
        assert face.TASK_TABLE is template_registry.TASK_TABLE
