"""compile_all: many programs compiled at once.  ``batch`` (:func:`compile_all` and
``compile_many``), on the worker processes of ``_workers`` (forked: ``_fork``; else started
fresh: ``_spawn``), which talk over pipes (``_messages``) and are timed (``_clock``); or on an
executor the caller gives (``_executor``); ``_progress`` its progress line.
"""
