"""The conformance suite's layer checks cover every layer of ``fastnn.nn``."""

from fastnn.conformance import layers


def test_every_nn_layer_has_a_conformance_spec():
    missing = layers.uncovered()
    assert not missing, (f"fastnn.nn layers without a spec in fastnn/conformance/layers.py: "
                         f"{missing}; add one so that their reverse is checked")


def test_specs_have_unique_labels():
    labels = [spec[0] for spec in layers.specs()]
    assert len(labels) == len(set(labels)), sorted(x for x in labels if labels.count(x) > 1)
