"""A load that runs around a lifecycle operation (rolling restart, upgrade, migration phase) and proves
nothing acknowledged was lost: `python -m kafkalab.load {start,checkpoint,stop,status}`.

The command line is described in __main__. The modules, one job each:

  control     start (topic, background process), checkpoint, stop, status: talks to the cluster
  runner      the background process: the numbered producer and a consumer-group member
  accounting  pure functions: phases, ack gaps, committed-offset checks, the phase report
  files       the state directory, its JSON-lines files (a torn last line tolerated), the report file
"""
