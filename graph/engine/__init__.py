"""The engine behind the fronts: FlowbabyService (graph.engine.service) built from one mixin per
group of operations over its shared state. Fronts import graph.api, never these modules."""
