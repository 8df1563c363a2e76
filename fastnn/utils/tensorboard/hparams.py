"""The three summaries of TensorBoard's hyperparameter plugin for one run (``add_hparams``)."""

from __future__ import annotations

from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

from fastnn.utils.tensorboard.summary import as_numpy

# (the Python types of a hyperparameter, its DataType, the struct_pb2.Value field); bool
# falls under the numbers, as in PyTorch (a bool is an int there too)
_KINDS = (((int, float), "DATA_TYPE_FLOAT64", "number_value"),
          ((str,), "DATA_TYPE_STRING", "string_value"))


def _summary(tag: str, **content) -> Summary:
    data = plugin_data_pb2.HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
    plugin = SummaryMetadata.PluginData(plugin_name=metadata.PLUGIN_NAME,
                                        content=data.SerializeToString())
    return Summary(value=[Summary.Value(tag=tag,
                                        metadata=SummaryMetadata(plugin_data=plugin))])


def hparams(hparam_dict: dict, metric_dict: dict, domains: dict | None = None) -> tuple:
    """(experiment, session start, session end) summaries: the hyperparameters' values
    (numbers, bools as numbers, strings, one-element tensors), their discrete domains
    where given, and the metrics' names."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise TypeError("add_hparams: hparam_dict and metric_dict must be dicts")
    domains = domains or {}
    if not isinstance(domains, dict):
        raise TypeError("add_hparams: hparam_domain_discrete must be a dict of lists")
    for name, values in domains.items():
        if (name not in hparam_dict or not isinstance(values, list)
                or not all(isinstance(v, type(hparam_dict[name])) for v in values)):
            raise TypeError(f"add_hparams: hparam_domain_discrete[{name!r}] must be a list "
                            f"of values of the type of hparam_dict[{name!r}]")
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        if hasattr(value, "detach"):  # a tensor: its first value
            value = float(as_numpy(value).reshape(-1)[0])
        found = next(((k, f) for types, k, f in _KINDS if isinstance(value, types)), None)
        if found is None:
            raise ValueError(f"add_hparams: {name!r} is a {type(value).__name__}; values "
                             f"must be int, float, str, bool or a tensor")
        kind, field = found
        setattr(start.hparams[name], field, value)
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: v})
                                                  for v in domains[name]])
        infos.append(api_pb2.HParamInfo(name=name, type=api_pb2.DataType.Value(kind),
                                        domain_discrete=domain))
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=name)) for name in metric_dict]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return (_summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            _summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            _summary(metadata.SESSION_END_INFO_TAG, session_end_info=end))
