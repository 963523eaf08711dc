"""``inductor-device-options demo``: the whole chain on the sample device.

Builds the "sampledev" backend, shows the C++ options Inductor gets for it,
compiles a small model with ``cpp_wrapper`` and with AOTInductor, shows the
compiler commands Inductor ran with the device's flags marked, checks the
results against eager CPU and the built modules against the options, and
shows that the same compile fails without the device's options. With
``ranks``, it then runs the sample's distributed job with torchrun and shows
what each rank saw.

The harness lives here, outside what a process imports: the sample device
(``inductor_device_options.sample``) imports nothing of it at module level. ``run`` orders
the steps, and each step's checks live in the module named for them. This package's
``__init__`` imports nothing, so that a child of the demo (a compile subprocess, a rank), which
imports only ``compiler_commands`` to report its commands, does not load the steps.
"""
