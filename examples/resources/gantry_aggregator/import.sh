terraform import gantry_aggregator.avs avs/avs
