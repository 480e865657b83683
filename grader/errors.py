"""The grader's error for the instructor: a problem with the course, its folders or its gradebook."""


class CourseError(Exception):
    """A problem with the course or its directories, worded for the instructor."""
