"""nbgrader configuration of the fp8lab course (nbgrader 0.9.6).

Read by the nbgrader CLI run from the repository root, by JupyterLab's nbgrader panels (the server
starts in the repository root) and by ``fp8lab labs ...``, whose scratch courses load this file and
override only their own folders (``fp8lab/labs/course.py``).

Set a value here, never with a command-line flag as well: a value from this file silently wins
over ``--Execute.timeout=...`` and friends. Everything the grading writes lives under the
git-ignored ``.grading/`` folder; learners' fetched labs go to the git-ignored ``my_labs/``
(``FP8LAB_GRADING_DIR`` and ``FP8LAB_MY_LABS_DIR`` move them).
"""

import os

c = get_config()  # noqa: F821 - injected by traitlets when nbgrader loads this file

_root = os.path.dirname(os.path.abspath(__file__))
# Grading artefacts and learners' fetched labs: inside the repository (both git-ignored) unless these
# environment variables move them (a shared disk for a class, a scratch folder for a test).
_grading = os.environ.get("FP8LAB_GRADING_DIR") or os.path.join(_root, ".grading")
_my_labs = os.environ.get("FP8LAB_MY_LABS_DIR") or os.path.join(_root, "my_labs")

# --- the course and its folders ------------------------------------------------------------------
c.CourseDirectory.course_id = "fp8lab"
c.CourseDirectory.root = _root
c.CourseDirectory.source_directory = "solutions"       # solutions/<lab>/<lab>.ipynb, with hidden tests
c.CourseDirectory.release_directory = "exercises"      # exercises/<lab>/<lab>.ipynb, generated and committed
c.CourseDirectory.submitted_directory = os.path.join(_grading, "submitted")
c.CourseDirectory.autograded_directory = os.path.join(_grading, "autograded")
c.CourseDirectory.feedback_directory = os.path.join(_grading, "feedback")
c.CourseDirectory.solution_directory = os.path.join(_grading, "solution")
c.CourseDirectory.source_with_tests_directory = os.path.join(_grading, "source_with_tests")
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(_grading, "gradebook.db")
# lab.toml is the tooling's metadata (tasks, dependencies, cheating bodies for the tests): not for students
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "lab.toml"]

# --- grading untrusted notebooks --------------------------------------------------------------------
# A submission is arbitrary code. nbgrader's autograde runs as usual (gradebook, timestamps, late
# penalties, restored test cells), but where it would execute the notebook in a Jupyter kernel,
# fp8lab.labs.harness.SandboxedGrading runs the student's answer cells in a bubblewrap sandbox
# (fp8lab/labs/sandbox.py: only the lab's allowed packages, no network, no repository, its own PID
# namespace, memory/CPU/file-size/output caps) and computes every test cell's verdict in the grader,
# where no student code runs. The `fp8lab labs` commands also rebuild each submission from the
# exercise, taking only the code of its answer cells by cell id (fp8lab.labs.harness.normalise).
c.Execute.timeout = 60                  # seconds per cell (and per test cell's calls): the one place it is set
c.Execute.kernel_name = "fp8lab-grader"  # nbgrader validate (the Validate button): a resource-limited ipykernel
# nbclient's kernel manager builds its own KernelSpecManager without this config, so the grading
# kernel's folder (fp8lab/labs/kernels/fp8lab-grader/kernel.json) is found through JUPYTER_PATH.
_kernels = os.path.join(_root, "fp8lab", "labs")
_path = os.environ.get("JUPYTER_PATH", "")
if _kernels not in _path.split(os.pathsep):
    os.environ["JUPYTER_PATH"] = os.pathsep.join(p for p in (_kernels, _path) if p)

# --- autograding ------------------------------------------------------------------------------------
c.OverwriteCells.add_missing_cells = True  # a deleted test cell comes back (and its tests run)
c.Autograde.sanitize_preprocessors = [
    "fp8lab.labs.harness.AnswerCellsOnly",  # the exercise with the submission's answer cells, by cell id
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "fp8lab.labs.harness.SandboxedGrading",  # in place of nbgrader.preprocessors.Execute
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# Late submissions: nbgrader's own penalty (assignment due dates: `fp8lab labs due LAB DATE`, or formgrader).
c.LateSubmissionPlugin.penalty_method = "none"  # late submissions are flagged (export status "late"); "zero" scores them 0

# --- the exchange, for JupyterLab's Assignments and Formgrader panels on one machine ----------------
c.Exchange.root = os.path.join(_grading, "exchange")  # release/fetch/submit/collect between the two roles
c.Exchange.assignment_dir = _my_labs  # where a learner's fetched labs go
for _folder in (_grading, _my_labs):  # the panels chdir there and sqlite needs the folder
    os.makedirs(_folder, exist_ok=True)
# The Assignments panel reloads the nbgrader config from inside my_labs/: find this file from there too.
_config_path = os.environ.get("JUPYTER_CONFIG_PATH", "")
if _root not in _config_path.split(os.pathsep):
    os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (_config_path, _root) if p)

# --- feedback -----------------------------------------------------------------------------------------
# The feedback pages show every test's outcome and message but not the hidden tests' code (neither
# the cells nor the lines a traceback would quote).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "fp8lab.labs.preprocess.ShortHiddenTracebacks",
    "fp8lab.labs.preprocess.ClearHiddenTestCells",  # only the instructor's test cells: a student's text is left alone
]
