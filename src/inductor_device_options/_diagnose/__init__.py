"""What ``doctor`` finds, computed and never printed (``_cli/`` prints).

- ``doctor``: the run of the static checks, in order;
- ``checks``: what a check is (``Check``, its problems: ``_options.problems.Problem``), their
  names, the ``Context`` they share;
- ``hook_checks``, ``options_checks``, ``path_checks``, ``header_checks``,
  ``probe_checks``: the checks, by what they look at;
- ``real_compile`` (and ``compile_child``, run in the fresh Python): ``doctor --compile``;
- ``devices``: which devices are checked, and what serves one;
- ``provider_loading``: ``--provider MODULE:CALLABLE``;
- ``probe``: the probe, its workspace and the commands ``CppBuilder`` renders for it;
- ``inductor_headers``: the headers Inductor's generated code includes;
- ``module_load``: a fresh Python that loads a built module; ``run``: running a tool;
- ``text``: how doctor words what it found.
"""
