"""The two ways serve() refuses: a call that cannot work, and a machine that cannot run what was asked."""


class Refused(Exception):
    """A call of serve() that cannot work, said before anything is built."""


class Unsupported(Exception):
    """This machine cannot run the workload as asked (green contexts where the driver has none, SMs
    that cannot be split into that many groups): serve() says so with "unsupported", and gpushare
    records the comparison as skipped, with this reason, not as failed."""
