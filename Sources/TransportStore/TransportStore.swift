import GRDB
import TransportModel
