"""Harbor-format tasks: model, validating loader, verifier run."""

from .model import Task, TaskError, find_tasks, load_task

__all__ = ["Task", "TaskError", "find_tasks", "load_task"]
