"""Teaching: a run told in words, drawn frame by frame, and laid out as a timeline.

Everything here reads a finished :class:`~netsim.result.Result` (its schedule,
playback and topology); nothing simulates or changes a run. The words and the data
behind the pictures need only NumPy; drawing needs matplotlib (the ``teaching``
extra), imported only when something is drawn.

Modules
-------
================== ======================================================================
``replay``         who holds what, when: the run replayed symbolically (whose data went
                   into each chunk), from its schedule and timings
``steps``          each step in one sentence (:func:`~netsim.teaching.steps.step_captions`)
                   and in the α–β model (:func:`~netsim.teaching.steps.step_costs`)
``explain``        ``netsim explain``: the whole story, buffers after every step, the
                   total beside the closed form of :mod:`netsim.analysis.closed_forms`
``frames``         what an animation shows at each moment, as plain data
``layout_2d``      where devices and links go on the page (geometry, no plotting)
``animate``        the frames drawn with matplotlib: GIF, MP4 or an HTML player
``player``         the self-contained HTML page that plays the frames
``timeline``       a Gantt chart: one row per link, one bar per message
``explain_scale``  beyond 32 devices: ``netsim explain`` as a page by step, axis and
                   representative devices, and its ``--step`` / ``--device`` zooms
``timeline_axes``  beyond 64 links: a timeline row per axis and direction (busy share)
``views``          which drawing is legible at a run's size (device by device, rings, neither)
``animate_axes``   beyond 32 devices or on a 3D torus: one ring per axis, traffic added up
``palette``        the device colours of every picture (colour-blind safe, one per member)
``formula``        a closed form with a run's numbers written in, checked by evaluating it
``events``         a run as data for the browser player (devices, links, transfers, arrivals,
                   the closed form beside), or per axis for big runs
``page``           ``netsim animate -o page.html``: the browser player as one offline page
``web_form``       ``netsim teach``: the page's choices, a request checked as a scenario, limits
``web_sweep``      ``netsim teach``: time against bytes per device, simulated and closed form
``web_app``        ``netsim teach``: the Starlette app (its own assets, JSON endpoints, bounds);
                   the page's script and style are package files in ``web/``
================== ======================================================================

Where a change goes
-------------------
A sentence that should read differently goes in ``steps`` (one step) or
``explain`` (the text around the steps); a new closed form goes in
:mod:`netsim.analysis.closed_forms` (one registry for every command). What a picture shows is decided in ``frames`` (and tested
there, without matplotlib); how it looks, in ``animate``; where a device sits, in
``layout_2d``. A new way to tell who holds what belongs in ``replay``, so that the
words and the pictures agree.
"""
