"""Tools around the course notebooks: executing a chapter, checking the numbers in its prose, and the
learner's working copy that ``make lab`` opens.

Nothing here imports jupyter, nbclient or torch at import time; each function imports what it needs.

>>> from fp8lab.course import prose
>>> [n.text for n in prose.numbers_in_prose("E4M3 tops out at 448, 8× finer than 2^-9.")]
['448', '8×', '2^-9']
"""
