"""The course's autograder: nbgrader's gradebook as the record, grading driven from the repo."""
