// SamplingParams is part of the public API (include/pagedllm/sampling.h).
#pragma once

#include "pagedllm/sampling.h"
