"""Interface of a source-model adapter."""

from abc import ABC, abstractmethod


class Adapter(ABC):
    """Reads a source toolkit's model into a
    :class:`~cntk.contrib.crosstalkcaffe.unimodel.cntkmodel.CntkModelDescription`."""

    @abstractmethod
    def load_model(self, global_conf):
        """Read the model that ``global_conf.source_solver`` names and return
        its description, learned values included."""
