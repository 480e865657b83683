"""The course's autograder: nbgrader's gradebook as the record, grading driven from the repo."""
import utils  # noqa: F401  # first, for every grader process: its start-up settings (utils/__init__.py)
