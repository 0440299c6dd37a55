"""The skeleton every service runs in, between the library's adapters and the ``cbt`` command (issue 28).

- ``skeleton``: a service's clients, built once and closed in order, and ``run``: topics, health, "started" and
  "stopped", the service's subscribers and loops until stop (or until idle), then the close order;
- ``lease``: ``LeaseHolder``, one owner's hold on one lease (leader election, a worker's task run);
- ``idle``: when a service's work is done, for ``--until-idle``;
- ``process``: one service per process — logging, telemetry, stop signals, the exit watchdog (``cbt run`` and each
  service's own ``cbt-<service>`` command).

Importing the package imports none of its modules: ``cbt --help`` builds its parser from ``process`` alone.
See ``docs/design/services.md#the-service-skeleton``.
"""
