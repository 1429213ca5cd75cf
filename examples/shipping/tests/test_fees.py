import unittest

from shipping.fees import shipping_fee


class ShippingFeeTest(unittest.TestCase):
    def test_light_parcel_pays_the_base_fee(self) -> None:
        self.assertEqual(shipping_fee(0.5, 1000), 499)

    def test_every_started_kilogram_above_the_first_costs_extra(self) -> None:
        self.assertEqual(shipping_fee(2.5, 1000), 499 + 2 * 150)

    def test_orders_at_the_threshold_ship_free(self) -> None:
        self.assertEqual(shipping_fee(3.0, 5000), 0)

    def test_weightless_parcels_are_refused(self) -> None:
        with self.assertRaises(ValueError):
            shipping_fee(0, 1000)


if __name__ == "__main__":
    unittest.main()
