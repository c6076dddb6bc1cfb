"""``zeropatch check``: what will break before the job is queued, read without running the job.

Its files, in the order of its pipeline (each imports only those above it):

1. ``files``: the files to read (a folder's, or those a script reaches), the repository's own top-level modules and its
   entry points;
2. ``signatures``: what the patches declare to look for, and a ``Finding``; ``branches``: which branch of a release
   test the installed releases take; ``reader``: each Python file read once, its imports resolved and every node
   matched against the signatures;
3. ``installed``: what the installed libraries hold, read from their files; ``class_members``: the attributes a
   library class has; ``dead_ends``, ``stdlib_removals``: what no patch can bring back (also read by ``explain``);
   ``findings``: the findings of a whole repository;
4. ``verdicts``: whether each breaks here and is fixed, decided as the run decides (the same legacy decision, the
   same releases);
5. ``report``: what it prints (the entry points' path first, the rest by cause, what needs a GPU apart), and its exit
   status.

``dry_run`` is the other half of ``zeropatch check SCRIPT``: the script's imports run in a fresh interpreter with
zeropatch on (``python -m zeropatch.check.dry_run``).
"""
