terraform import gantry_executor.main default/avs
