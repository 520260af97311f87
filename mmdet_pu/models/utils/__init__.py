from .positive_share import (PositiveShare, count_positives, positive_shares,
                             training_batches)

__all__ = ['PositiveShare', 'count_positives', 'positive_shares', 'training_batches']
