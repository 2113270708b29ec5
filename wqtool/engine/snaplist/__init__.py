"""The snapwebsites list plugin's hourly client journal (``0.msg`` … ``23.msg``): discovery, reading, replay,
verify, pack, clean and the forwarder to a fastjournal daemon (per the unimplemented libfastjournal design).

Spec: ``docs/formats/snap-journals.md`` Part B. Declarations in ``wqtool.formats.snaplist``; everything here is engine
(I/O, loops, state); nothing prints.
"""
